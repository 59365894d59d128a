/**
 * The seal file's I/O (seal.ts holds the format and the checks): read it,
 * and write it atomically and durably (temp file, fsync, rename, folder
 * fsync). Node's file system: a bundler building for the browser takes
 * persistence/browser/seal-files.ts instead (package.json `browser`); a
 * store without a folder has no seal.
 */
import { open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'

/** The seal file `file` of `dir` (bytes), or undefined when there is none. */
export async function readSealFile(dir: string, file: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await readFile(join(dir, file)))
  } catch {
    return undefined
  }
}

/** Writes a file atomically and durably: temp file, fsync, rename, folder fsync. */
async function writeDurably(dir: string, file: string, bytes: Uint8Array): Promise<void> {
  const temp = join(dir, `${file}.tmp`)
  const handle = await open(temp, 'w')
  try {
    await handle.writeFile(bytes)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temp, join(dir, file))
  const folder = await open(dir, 'r')
  try {
    await folder.sync()
  } finally {
    await folder.close()
  }
}

/** Writes the seal file `file` of `dir` durably, and removes a temp file left by an earlier attempt. */
export async function writeSealFile(dir: string, file: string, bytes: Uint8Array): Promise<void> {
  await writeDurably(dir, file, bytes)
  await rm(join(dir, `${file}.tmp`), { force: true })
}
