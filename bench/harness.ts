/**
 * Benchmark harness: named benchmarks report measurements, each optionally
 * beside the baseline it competes with (measured in the same run); the table
 * prints the ratio, and `bench/results.json` keeps the figures.
 */

/** One figure of a benchmark. */
export interface Measurement {
  /** Row label, e.g. `orset add`. */
  readonly name: string
  readonly value: number
  /** Unit of `value` and of the baseline: `ops/s`, `ms`, `bytes`, `MiB`. */
  readonly unit: string
  /** Which direction is better, for the ratio's reading. */
  readonly better: 'higher' | 'lower'
  /** The competing figure, same unit, measured in the same run. */
  readonly baseline?: { readonly label: string; readonly value: number }
  /** The target for `value / baseline.value`, e.g. `>= 0.8` or `<= 1.1`. */
  readonly target?: string
  /** Free text shown after the row. */
  readonly note?: string
}

/** A named benchmark. */
export interface Benchmark {
  /** `area/name`, e.g. `crdt/orset-resync`; `--filter` matches on it. */
  readonly name: string
  run(): Promise<Measurement[]>
}

/** `value / baseline`, or undefined without a baseline. */
export function ratioOf(measurement: Measurement): number | undefined {
  if (!measurement.baseline || measurement.baseline.value === 0) return undefined
  return measurement.value / measurement.baseline.value
}

/** Whether a measurement meets its target (undefined when it has none). */
export function meetsTarget(measurement: Measurement): boolean | undefined {
  const ratio = ratioOf(measurement)
  if (!measurement.target || ratio === undefined) return undefined
  const match = /^(<=|>=)\s*([\d.]+)/.exec(measurement.target.trim())
  if (!match) return undefined
  const limit = Number(match[2])
  return match[1] === '<=' ? ratio <= limit : ratio >= limit
}

/** Times `fn` over `iterations` calls; returns operations per second. */
export function opsPerSecond(iterations: number, fn: (i: number) => void): number {
  const start = process.hrtime.bigint()
  for (let i = 0; i < iterations; i++) fn(i)
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  return iterations / seconds
}

/** Times an async function; returns milliseconds. */
export async function timeMs(fn: () => Promise<unknown> | unknown): Promise<number> {
  const start = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - start) / 1e6
}

/** Formats a number for the table. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  const abs = Math.abs(value)
  if (abs >= 1e6) return `${(value / 1e6).toFixed(2)}M`
  if (abs >= 1e4) return `${(value / 1e3).toFixed(1)}k`
  if (abs >= 100) return value.toFixed(0)
  if (abs >= 1) return value.toFixed(2)
  return value.toPrecision(3)
}
