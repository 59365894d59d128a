/**
 * The seal file's I/O (seal.ts holds the format and the checks): read it,
 * and write it atomically and durably (temp file, fsync, rename, folder
 * fsync). Node's file system: a bundler building for the browser takes
 * persistence/browser/seal-files.ts instead (package.json `browser`); a
 * store without a folder has no seal.
 *
 * The file is written as it is (its list is in deflated chunks, format
 * version 2); a file that starts with gzip's magic bytes (version 1, gzipped
 * as a whole, written before) is inflated.
 */
import { open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { constants, deflateRawSync, gunzip } from 'node:zlib'

const gunzipAsync = promisify(gunzip)
/** More than any seal (about 12 bytes per name); a file that inflates past it is treated as damaged. */
const MAX_SEAL_BYTES = 1 << 30

/** Raw DEFLATE for the seal's chunks (format/seal.ts): Node's zlib, level 6. */
export function deflateRaw(raw: Uint8Array): Uint8Array {
  return new Uint8Array(deflateRawSync(raw, { level: constants.Z_DEFAULT_COMPRESSION }))
}

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

/** Writes the seal file `file` of `dir` durably, and removes a temp file left by an earlier attempt. */
export async function writeSealFile(dir: string, file: string, bytes: Uint8Array): Promise<void> {
  await writeDurably(dir, file, bytes)
  await rm(join(dir, `${file}.tmp`), { force: true })
}
