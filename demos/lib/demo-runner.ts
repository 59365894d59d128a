/**
 * What every demo shares: its options (`--short`, `--data DIR`, `--out
 * FILE`), a fresh data folder, a cluster that is always stopped, and the
 * closing verdict line (`VERDICT: PASS` / `VERDICT: FAIL`, non-zero exit).
 */
import { mkdir, rm } from 'node:fs/promises'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Cluster } from './cluster.ts'

/** Options every demo takes. */
export interface DemoOptions {
  /** A smaller, faster run (tests). */
  readonly short: boolean
  /** The folder holding every agent's LevelDB folder (emptied first). */
  readonly data: string
  /** Where an HTML report goes (demos that write one). */
  readonly out?: string
}

/** One check of a verdict. */
export interface Check {
  readonly ok: boolean
  readonly what: string
}

/** Prints a section title. */
export function section(title: string): void {
  console.log(`\n== ${title}`)
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      short: { type: 'boolean', default: false },
      data: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  })
}

/** Parses the demo's command line (a bad option: usage on stderr, exit 2). */
export function demoOptions(name: string, argv = process.argv.slice(2)): DemoOptions {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    console.error(`${name}: ${(error as Error).message}\nusage: ${name} [--short] [--data DIR] [--out FILE] (--help for more)`)
    process.exit(2)
  }
  const { values } = parsed
  if (values.help) {
    console.log(
      `usage: ${name} [--short] [--data DIR] [--out FILE]\n  --short     a smaller, faster run\n  --data DIR  folder for the agents' LevelDB folders (default ./.data/${name}; emptied first)\n  --out FILE  HTML report path (demos that write one)`,
    )
    process.exit(0)
  }
  return { short: values.short ?? false, data: resolve(values.data ?? `.data/${name}`), out: values.out === undefined ? undefined : resolve(values.out) }
}

/**
 * Runs a demo: a fresh data folder, a cluster, the body (which returns its
 * checks), the verdict line, and the exit code. Agents are stopped whatever
 * happens.
 */
export async function runDemo(name: string, title: string, body: (cluster: Cluster, options: DemoOptions) => Promise<Check[]>): Promise<void> {
  const options = demoOptions(name)
  const began = Date.now()
  console.log(`${title}\n(data: ${options.data}${options.short ? ', short mode' : ''})`)
  await rm(options.data, { recursive: true, force: true })
  await mkdir(options.data, { recursive: true })
  const cluster = new Cluster({ root: options.data })
  let checks: Check[] = []
  let failure: unknown
  try {
    checks = await body(cluster, options)
  } catch (error) {
    failure = error
  } finally {
    await cluster.stop()
  }
  const leftovers = [...cluster.agents.values()].filter((agent) => agent.child.exitCode === null && agent.child.signalCode === null)
  if (cluster.agents.size > 0)
    checks.push({ ok: leftovers.length === 0, what: `every agent process has exited (${cluster.agents.size} agents, ${leftovers.length} left running)` })
  section('verdict')
  for (const check of checks) console.log(`  ${check.ok ? 'ok  ' : 'FAIL'}  ${check.what}`)
  if (failure) console.log(`  FAIL  the demo stopped: ${(failure as Error)?.stack ?? String(failure)}`)
  const pass = failure === undefined && checks.length > 0 && checks.every((check) => check.ok)
  const seconds = ((Date.now() - began) / 1000).toFixed(1)
  console.log(`\nVERDICT: ${pass ? 'PASS' : 'FAIL'} — ${name} (${seconds} s)`)
  process.exitCode = pass ? 0 : 1
  // Children are gone; do not wait on stray handles.
  setImmediate(() => process.exit(pass ? 0 : 1))
}

/** Polls `fn` until `done(value)` or the deadline; returns the last value and whether it got there. */
export async function poll<T>(fn: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number, everyMs = 50): Promise<{ value: T; ok: boolean }> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (done(value)) return { value, ok: true }
    if (Date.now() > deadline) return { value, ok: false }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** A byte count for people. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(2)} MB`
}
