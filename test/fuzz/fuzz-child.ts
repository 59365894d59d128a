/**
 * The fuzzer's child process (started by decoders.test.ts with
 * `--max-old-space-size=128`): runs every target of targets.ts on inputs
 * made by mutate.ts (after an untimed warm-up on the seeds), times each
 * decode (an input over 20 ms by its fastest of three runs), and prints one
 * JSON line: how many
 * cases, the slowest (target, case, mutation, ms) and every finding (a throw
 * outside the target's contract). Case `i` is decided by the seed and `i`
 * alone: `--replay i` runs that one case and prints its input in hex.
 *
 *   node --max-old-space-size=128 --import tsx test/fuzz/fuzz-child.ts --seed 1 --cases 4000 [--replay 17] [--only 'sync message']
 */
import { performance } from 'node:perf_hooks'
import { appendCrc32 } from '../../crdt/types/crc32.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { mutateInput } from './mutate.ts'
import { allowed, TARGETS as ALL_TARGETS } from './targets.ts'

const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(`--${name}`)
  return at >= 0 ? Number(args[at + 1]) : fallback
}
const seed = option('seed', 1)
const cases = option('cases', 2000)
const replay = option('replay', -1)
const onlyAt = args.indexOf('--only')
/** The targets of this run: all, or those whose name contains `--only`. */
const TARGETS = onlyAt >= 0 ? ALL_TARGETS.filter((target) => target.name.includes(args[onlyAt + 1])) : ALL_TARGETS

// Valid encodings of every target, made once from the seed.
const seedsRandom = new Prng(seed)
const seeds = TARGETS.map((target) => target.seeds(seedsRandom))

/** The input of case `i`: its target, mutation and bytes. */
function caseOf(i: number): { target: number; mutation: string; input: Uint8Array } {
  const random = new Prng((Math.imul(seed, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0)
  const target = i % TARGETS.length
  return { target, ...mutateInput(random, seeds[target], TARGETS[target], (body) => appendCrc32(body)) }
}

interface Finding {
  readonly target: string
  readonly case: number
  readonly mutation: string
  readonly error: string
}

const findings: Finding[] = []
/** Inputs slower than this are timed again (see `run`). */
const RETIME_MS = 20
let slowest = { target: '', case: -1, mutation: '', ms: 0, bytes: 0 }
const perTarget: Record<string, { cases: number; maxMs: number }> = {}

function run(i: number): void {
  const { target: index, mutation, input } = caseOf(i)
  const target = TARGETS[index]
  // Progress on stderr: if the process dies (out of memory), the parent knows the case.
  process.stderr.write(`case ${i}\n`)
  const once = (): number => {
    const started = performance.now()
    try {
      target.decode(input)
    } catch (error) {
      if (!allowed(target, error)) {
        findings.push({
          target: target.name,
          case: i,
          mutation,
          error: `${(error as Error)?.name}: ${String((error as Error)?.message ?? error).slice(0, 200)}`,
        })
      }
    }
    return performance.now() - started
  }
  let ms = once()
  // A decode is deterministic: an input that looks slow is timed twice more and
  // judged on its fastest run, so that a GC pause or the process being
  // descheduled on a busy machine is not taken for a slow decoder.
  for (let retry = 0; retry < 2 && ms > RETIME_MS; retry++) {
    const findingsBefore = findings.length
    ms = Math.min(ms, once())
    findings.length = findingsBefore
  }
  const stats = (perTarget[target.name] ??= { cases: 0, maxMs: 0 })
  stats.cases++
  stats.maxMs = Math.max(stats.maxMs, ms)
  if (ms > slowest.ms) slowest = { target: target.name, case: i, mutation, ms, bytes: input.length }
}

/** Runs each target on its seeds and a few mutations, untimed: what is timed is decoding, not the JIT compiling it. */
function warmUp(): void {
  const random = new Prng(seed ^ 0x5eed)
  for (const [index, target] of TARGETS.entries()) {
    process.stderr.write(`warm-up ${target.name}\n`)
    const inputs = [...seeds[index], ...Array.from({ length: 30 }, () => mutateInput(random, seeds[index], target, (body) => appendCrc32(body)).input)]
    for (const input of inputs) {
      try {
        target.decode(input)
      } catch {
        /* judged in the timed run */
      }
    }
  }
}

warmUp()
if (replay >= 0) {
  const { target, mutation, input } = caseOf(replay)
  console.log(JSON.stringify({ case: replay, target: TARGETS[target].name, mutation, input: Buffer.from(input).toString('hex') }))
  run(replay)
  console.log(JSON.stringify({ findings, slowest }))
} else {
  for (let i = 0; i < cases; i++) run(i)
  console.log(
    JSON.stringify({ seed, cases, targets: TARGETS.length, heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20), slowest, perTarget, findings }),
  )
}
