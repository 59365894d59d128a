/**
 * Whether a LevelDB folder has room for a reopen (see LevelStorage): a
 * file as large as the folder's logs plus 64 KiB is written, fsynced and
 * removed. Node's file system: a bundler building for the browser takes
 * persistence/browser/space-probe.ts instead (package.json `browser`).
 */
import { open as openFile, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'

/** A file written (then removed) in the folder to check there is room to reopen after a write error. */
const SPACE_PROBE = 'concord-space-probe'

/** Resolves when a file the size of `dir`'s LevelDB logs plus 64 KiB fits; rejects with the file system's error. */
export async function probeFolderSpace(dir: string): Promise<void> {
  let bytes = 64 * 1024
  for (const file of await readdir(dir).catch(() => [] as string[])) {
    if (file.endsWith('.log')) bytes += (await stat(join(dir, file)).catch(() => ({ size: 0 }))).size
  }
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
