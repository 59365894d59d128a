/**
 * `npm run bench [-- --filter TEXT] [--full]`: runs the benchmarks, prints one table
 * with each figure beside its baseline and the ratio, writes
 * `bench/results.json`. A filtered run replaces only the entries of the
 * benchmarks it ran and keeps the others (each entry carries its own date).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { formatNumber, meetsTarget, ratioOf, type Benchmark, type Measurement } from './harness.ts'

/** Benchmark modules, by area; each exports `benchmarks: Benchmark[]`. */
const suites: Array<() => Promise<{ benchmarks: Benchmark[] }>> = [
  // crdt/
  () => import('./crdt.bench.ts'),
  // crdt/ documents
  () => import('./documents.bench.ts'),
  () => import('./waiting.bench.ts'),
  // persistence/
  () => import('./persistence.bench.ts'),
  // sync/ and transports/
  () => import('./sync.bench.ts'),
  () => import('./peer.bench.ts'),
  () => import('./many-names.bench.ts'),
  () => import('./cold-first-sync.bench.ts'),
  () => import('./attacks.bench.ts'),
  () => import('./apply-gate.bench.ts'),
  // libp2p
  () => import('./libp2p.bench.ts'),
  // concord-crdt/browser
  () => import('./browser.bench.ts'),
  // side by side with y-websocket (each contender in its own processes)
  () => import('./peers.bench.ts'),
]

const program = new Command('bench')
  .option('-f, --filter <text>', 'run only benchmarks whose name contains this text')
  .option('--full', 'the long forms of the benchmarks that have one (CONCORD_BENCH_FULL=1)')
  .option('-o, --out <file>', 'where to write the JSON results', fileURLToPath(new URL('./results.json', import.meta.url)))
  .parse()
const options = program.opts<{ filter?: string; full?: boolean; out: string }>()
if (options.full) process.env.CONCORD_BENCH_FULL = '1'

type Result = { benchmark: string; date: string; measurements: Measurement[] }
const results: Result[] = []
const rows: string[][] = [['benchmark', 'measurement', 'value', 'baseline', 'ratio', 'target']]

for (const load of suites) {
  const { benchmarks } = await load()
  for (const benchmark of benchmarks) {
    if (options.filter && !benchmark.name.includes(options.filter)) continue
    process.stderr.write(`running ${benchmark.name}...\n`)
    const measurements = await benchmark.run()
    results.push({ benchmark: benchmark.name, date: new Date().toISOString(), measurements })
    for (const m of measurements) {
      const ratio = ratioOf(m)
      const verdict = meetsTarget(m)
      rows.push([
        benchmark.name,
        m.name,
        `${formatNumber(m.value)} ${m.unit}`,
        m.baseline ? `${formatNumber(m.baseline.value)} ${m.unit} (${m.baseline.label})` : '',
        ratio === undefined ? '' : `${ratio.toFixed(3)}x`,
        m.target ? `${m.target}x ${verdict === undefined ? '' : verdict ? 'ok' : 'MISSED'}` : '',
      ])
      if (m.note) rows.push(['', `  ${m.note}`, '', '', '', ''])
    }
  }
}

const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)))
for (const [index, row] of rows.entries()) {
  console.log(
    row
      .map((cell, col) => cell.padEnd(widths[col]))
      .join('  ')
      .trimEnd(),
  )
  if (index === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '))
}
writeFileSync(options.out, `${JSON.stringify({ date: new Date().toISOString(), node: process.version, results: mergedWithPrevious(results) }, null, 2)}\n`)
console.log(`\nresults written to ${options.out}`)

/** With a filter, the previous results of the benchmarks that did not run, in their old order. */
function mergedWithPrevious(fresh: Result[]): Result[] {
  if (!options.filter || !existsSync(options.out)) return fresh
  let previous: Result[]
  try {
    const parsed = JSON.parse(readFileSync(options.out, 'utf8')) as { date?: string; results?: Result[] }
    previous = (parsed.results ?? []).map((entry) => ({ ...entry, date: entry.date ?? parsed.date ?? 'unknown' }))
  } catch {
    return fresh
  }
  const byName = new Map(fresh.map((entry) => [entry.benchmark, entry]))
  const merged = previous.map((entry) => byName.get(entry.benchmark) ?? entry)
  for (const entry of fresh) if (!previous.some((old) => old.benchmark === entry.benchmark)) merged.push(entry)
  return merged
}
