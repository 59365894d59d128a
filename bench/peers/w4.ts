/**
 * W4, one awaited writer: 2,000 small Yjs updates, each awaited until
 * durable, through a store in `sync` mode against classic-level's own
 * `put(sync)` (the floor of any store on LevelDB), each in its own process,
 * interleaved in slices (bench/ingest-contenders.ts). The fdatasyncs are
 * counted by the kernel's side: the same writer in a child process under
 * `strace -f -c -e trace=fdatasync,fsync` (every thread: LevelDB syncs from
 * the libuv pool), against the group commits the store reports (its fsynced
 * batches). Without strace the count is left out.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { isolatedContender, type ContenderSpec } from '../ingest-contenders.ts'

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const WRITER = fileURLToPath(new URL('./w4-writer.ts', import.meta.url))

/** What the kernel saw of one writer's run. */
export interface SyncCount {
  readonly ops: number
  readonly fdatasync: number
  readonly fsync: number
  /** The store's fsynced batches (for put(sync): one per put). */
  readonly groupCommits: number
  /** CPU time of the writing loop, ms. */
  readonly cpuMs: number
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${file}: ${error.message}\n${stderr}`)) : resolve(stdout),
    )
  })
}

/** Runs the writer `kind` once under strace and counts its fdatasync and fsync calls; undefined without strace. */
export async function countSyncs(kind: 'store' | 'level-put', count: number): Promise<SyncCount | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'concord-bench-w4-'))
  try {
    const out = join(dir, 'strace.txt')
    let stdout: string
    try {
      stdout = await run('strace', ['-f', '-c', '-e', 'trace=fdatasync,fsync', '-o', out, process.execPath, '--import', TSX, WRITER, kind, String(count), dir])
    } catch (error) {
      if (/ENOENT/.test(String(error))) return undefined
      throw error
    }
    const summary = await readFile(out, 'utf8')
    // strace -c: "% time  seconds  usecs/call  calls  [errors]  syscall"
    const calls = (name: string) => {
      const row = summary
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        .find((cells) => cells.at(-1) === name)
      return row === undefined ? 0 : Number(row[3])
    }
    const { ops, groupCommits, cpuMs } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { ops: number; groupCommits: number; cpuMs: number }
    return { ops, fdatasync: calls('fdatasync'), fsync: calls('fsync'), groupCommits, cpuMs }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Rates (ops/s of each contender's own time) of the store and of put(sync), interleaved in `slices` slices of `perSlice`. */
export async function w4Rates(slices: number, perSlice: number, warmup: number): Promise<{ store: number; levelPut: number }> {
  const specs: ContenderSpec[] = [
    { kind: 'store', writers: 1, perSlice, slices, warmup, durability: { mode: 'sync' } },
    { kind: 'level-put', perSlice },
  ]
  const contenders = specs.map((spec) => isolatedContender(spec))
  const dirs = await Promise.all(contenders.map(() => mkdtemp(join(tmpdir(), 'concord-bench-w4-'))))
  const ops = [0, 0]
  const time = [0, 0]
  try {
    await Promise.all(contenders.map((contender, i) => contender.open(dirs[i])))
    for (let w = -warmup; w < 0; w++) for (const contender of contenders) await contender.slice(w, 80)
    for (let s = 0; s < slices; s++) {
      for (let k = 0; k < contenders.length; k++) {
        const i = (s + k) % contenders.length
        const result = await contenders[i].slice(s, 80)
        ops[i] += result.ops
        time[i] += result.seconds
      }
    }
  } finally {
    await Promise.all(contenders.map((contender) => contender.close().catch(() => undefined)))
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  }
  return { store: ops[0] / time[0], levelPut: ops[1] / time[1] }
}
