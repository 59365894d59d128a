/**
 * The decoder fuzzer: every wire and storage decoder (test/fuzz/targets.ts)
 * on random and adversarial inputs (test/fuzz/mutate.ts: huge counts and
 * lengths, truncations, bit flips of valid encodings, repeated parts, deep
 * nesting), in a child process with a 128 MiB heap. It must never run out of
 * memory, never throw outside a decoder's contract, and never take more than
 * 100 ms on one input (measured in the child after a warm-up, a slow-looking
 * input by its fastest of three runs; a robustness
 * bound with a wide margin, not a performance figure). Seeded and
 * replayable: CONCORD_FUZZ_SEED, CONCORD_FUZZ_CASES and CONCORD_FUZZ_ONLY (a
 * part of the target names) choose the run; a failure names the case and
 * the command that replays it.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'

const SEED = Number(process.env.CONCORD_FUZZ_SEED ?? 1)
const CASES = Number(process.env.CONCORD_FUZZ_CASES ?? 6000)
/** Only the targets whose name contains this (all by default). */
const ONLY = process.env.CONCORD_FUZZ_ONLY
const BOUND_MS = 100

const childArgs = (extra: string[]) => [
  '--max-old-space-size=128',
  '--import',
  'tsx',
  'test/fuzz/fuzz-child.ts',
  '--seed',
  String(SEED),
  ...(ONLY ? ['--only', ONLY] : []),
  ...extra,
]
const replay = (i: number) => `node ${childArgs(['--replay', String(i)]).join(' ')}`

test(`decoder fuzzer: ${CASES} inputs (seed ${SEED}) over every wire and storage decoder, in a 128 MiB heap: no out of memory, no untyped error, no input over ${BOUND_MS} ms`, {
  timeout: 170_000,
}, async (t) => {
  const child = spawn(process.execPath, childArgs(['--cases', String(CASES)]), { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderrTail = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-8192)
  })
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])))
  if (code !== 0 || signal !== null) {
    // The child prints "warm-up <target>" and "case <i>" before each input: the last one is where it died.
    const progress = [...stderrTail.matchAll(/^(warm-up .+|case (\d+))$/gm)].at(-1)
    const where = progress?.[2] !== undefined ? `case ${progress[2]}; replay: ${replay(Number(progress[2]))}` : (progress?.[1] ?? 'start-up')
    assert.fail(
      `the fuzzer child ended with ${signal ?? `exit ${code}`} (out of memory?) at ${where}\n${stderrTail.replace(/^(warm-up .+|case \d+)\n/gm, '').slice(-1500)}`,
    )
  }
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    cases: number
    targets: number
    heapMiB: number
    slowest: { target: string; case: number; mutation: string; ms: number; bytes: number }
    findings: Array<{ target: string; case: number; mutation: string; error: string }>
  }
  t.diagnostic(
    `slowest input: ${result.slowest.target}, case ${result.slowest.case} (${result.slowest.mutation}, ${result.slowest.bytes} bytes), ${result.slowest.ms.toFixed(1)} ms; heap at the end ${result.heapMiB} MiB; ${result.targets} targets`,
  )
  assert.equal(result.cases, CASES)
  assert.deepEqual(
    result.findings.map((f) => `${f.target} case ${f.case} (${f.mutation}): ${f.error}; replay: ${replay(f.case)}`),
    [],
  )
  assert.ok(
    result.slowest.ms < BOUND_MS,
    `${result.slowest.target} took ${result.slowest.ms.toFixed(1)} ms on case ${result.slowest.case}; replay: ${replay(result.slowest.case)}`,
  )
})
