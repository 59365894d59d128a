/**
 * Whether a LevelDB folder has room for a reopen (see LevelStorage): a
 * file as large as the folder's logs plus 64 KiB is written, fsynced and
 * removed; and how many bytes the folder holds. Node's file system: a
 * bundler building for the browser takes persistence/browser/space-probe.ts
 * instead (package.json `browser`).
 */
import { open as openFile, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'

/** A file written (then removed) in the folder to check there is room to reopen after a write error. */
const SPACE_PROBE = 'concord-space-probe'

/** The bytes of a LevelDB folder's files, and of its logs (`NNNNNN.log`) among them. */
export async function folderBytes(dir: string): Promise<{ readonly total: number; readonly logs: number }> {
  let total = 0
  let logs = 0
  for (const file of await readdir(dir).catch(() => [] as string[])) {
    const { size } = await stat(join(dir, file)).catch(() => ({ size: 0 }))
    total += size
    if (file.endsWith('.log')) logs += size
  }
  return { total, logs }
}

/** Resolves when a file the size of `dir`'s LevelDB logs plus 64 KiB fits; rejects with the file system's error. */
export async function probeFolderSpace(dir: string): Promise<void> {
  const bytes = 64 * 1024 + (await folderBytes(dir)).logs
  const path = join(dir, SPACE_PROBE)
  let handle
  try {
    handle = await openFile(path, 'w')
    const chunk = Buffer.alloc(Math.min(bytes, 1 << 20))
    for (let written = 0; written < bytes; written += chunk.length) await handle.write(chunk, 0, Math.min(chunk.length, bytes - written))
    await handle.sync()
  } finally {
    await handle?.close().catch(() => undefined)
    await rm(path, { force: true }).catch(() => undefined)
  }
}
