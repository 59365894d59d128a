/**
 * The seal file's I/O (seal.ts holds the format and the checks): read it,
 * and write it atomically and durably (temp file, fsync, rename, folder
 * fsync). Node's file system: a bundler building for the browser takes
 * persistence/browser/seal-files.ts instead (package.json `browser`); a
 * store without a folder has no seal.
 *
 * The file is written gzipped (since issue 19: its names repeat their
 * prefixes, 120 KB -> 23 KB for 10,000 names); a file that does not start
 * with gzip's magic bytes is read as it is (written before).
 */
import { open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gunzip, gzip } from 'node:zlib'

const gzipAsync = promisify(gzip)
const gunzipAsync = promisify(gunzip)
/** More than any seal (about 12 bytes per name); a file that inflates past it is treated as damaged. */
const MAX_SEAL_BYTES = 1 << 30

/** The seal file `file` of `dir` (its bytes, inflated), or undefined when there is none or it does not inflate. */
export async function readSealFile(dir: string, file: string): Promise<Uint8Array | undefined> {
  let bytes: Uint8Array
  try {
    bytes = new Uint8Array(await readFile(join(dir, file)))
  } catch {
    return undefined
  }
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes
  try {
    return new Uint8Array(await gunzipAsync(bytes, { maxOutputLength: MAX_SEAL_BYTES }))
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

/** Writes the seal file `file` of `dir` durably (gzipped), and removes a temp file left by an earlier attempt. */
export async function writeSealFile(dir: string, file: string, bytes: Uint8Array): Promise<void> {
  await writeDurably(dir, file, new Uint8Array(await gzipAsync(bytes)))
  await rm(join(dir, `${file}.tmp`), { force: true })
}
