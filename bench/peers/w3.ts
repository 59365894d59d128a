/**
 * W3, cold start, and the disk it takes: `docs` small Yjs documents (three
 * typed edits each) written by a store (history kept, async mode) and by
 * y-leveldb, each folder built in its own process; then a fresh process per
 * contender opens its folder and reads every document's text (time from
 * open to the last read, and the process's peak RSS); the folders' bytes on
 * disk after close, and once LevelDB compacted them (live data only). Runs bench/peers/w3-child.ts.
 */
import { execFile } from 'node:child_process'
import { ClassicLevel } from 'classic-level'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { LEVEL_TABLE_OPTIONS } from '../../persistence/storage/level/open-level-storage.ts'

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const CHILD = fileURLToPath(new URL('./w3-child.ts', import.meta.url))

export type W3Contender = 'store' | 'y-leveldb'

function child(args: string[]): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', TSX, CHILD, ...args], { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`w3 ${args.join(' ')}: ${error.message}\n${stderr}`))
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, number>)
    })
  })
}

async function folderBytes(dir: string): Promise<number> {
  let bytes = 0
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    bytes += entry.isDirectory() ? await folderBytes(path) : (await stat(path)).size
  }
  return bytes
}

/**
 * The folder's bytes once LevelDB compacted all of it (`compactRange` over
 * every key, then a reopen, which deletes the tables it made obsolete): its
 * live data, without the tables a compaction left for the next open to delete.
 * `options`: the table options its owner writes with (a store's
 * LEVEL_TABLE_OPTIONS), so the compaction writes the tables it would.
 */
async function compactedBytes(dir: string, options: Record<string, unknown> = {}): Promise<number> {
  const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view', ...options })
  await db.open()
  await db.compactRange(Uint8Array.of(0), Uint8Array.of(0xff, 0xff, 0xff, 0xff))
  await db.close()
  await db.open()
  await db.close()
  return folderBytes(dir)
}

/** Builds both folders, then reads each `reads` times (interleaved, fresh processes); medians of the reads. */
export async function runW3(
  docs: number,
  reads: number,
): Promise<Record<W3Contender, { ms: number; cpuMs: number; peakRssMiB: number; bytes: number; compactedBytes: number }>> {
  const dir = await mkdtemp(join(tmpdir(), 'concord-bench-w3-'))
  try {
    const contenders: W3Contender[] = ['store', 'y-leveldb']
    for (const kind of contenders) await child([kind, 'build', dir, String(docs)])
    const runs = new Map<W3Contender, Array<{ ms: number; cpuMs: number; peakRssMiB: number }>>(contenders.map((kind) => [kind, []]))
    for (let r = 0; r < reads; r++) {
      for (let i = 0; i < contenders.length; i++) {
        const kind = contenders[(i + r) % contenders.length]
        const result = await child([kind, 'read', dir, String(docs)])
        runs.get(kind)!.push({ ms: result.ms, cpuMs: result.cpuMs, peakRssMiB: result.peakRssMiB })
      }
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
    const out = {} as Record<W3Contender, { ms: number; cpuMs: number; peakRssMiB: number; bytes: number; compactedBytes: number }>
    for (const kind of contenders) {
      const results = runs.get(kind)!
      out[kind] = {
        ms: median(results.map((r) => r.ms)),
        cpuMs: median(results.map((r) => r.cpuMs)),
        peakRssMiB: median(results.map((r) => r.peakRssMiB)),
        bytes: await folderBytes(join(dir, kind)),
        compactedBytes: await compactedBytes(join(dir, kind), kind === 'store' ? LEVEL_TABLE_OPTIONS : {}),
      }
    }
    return out
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
