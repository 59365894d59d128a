/**
 * The archive files of cold names (format in archive.ts): written to a
 * temporary name, fsynced, renamed and the folder fsynced before the
 * marker is committed; read back and checked against the marker's hash.
 * Node's file system: a bundler building for the browser takes
 * persistence/browser/archive-files.ts instead (package.json `browser`).
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gunzip, gzip } from 'node:zlib'
import { bytesEqual } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { type ArchivedEntry, decodeArchive, encodeArchive, encodeArchiveMarker, type ArchiveMarker } from '../format/archive.ts'
import { sha256, toHex } from '../format/checksum.ts'
import type { NameMeta } from '../format/name-meta.ts'
import type { SegmentRef } from '../format/segments.ts'
import type { StorageEntry } from '../storage/storage.ts'

const gzipAsync = promisify(gzip)
const gunzipAsync = promisify(gunzip)

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Writes the archive file of a name durably; returns the file name and the encoded marker. */
export async function writeArchive(dir: string, meta: NameMeta, entries: readonly StorageEntry[], now: number): Promise<{ file: string; marker: Uint8Array }> {
  try {
    await mkdir(dir, { recursive: true })
    const file = `${toHex(sha256(new TextEncoder().encode(meta.name))).slice(0, 32)}.concord-archive.gz`
    const compressed = new Uint8Array(await gzipAsync(encodeArchive(meta.name, entries)))
    const temp = join(dir, `${file}.${toHex(randomBytes(4))}.tmp`)
    const handle = await open(temp, 'w')
    try {
      await handle.writeFile(compressed)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, join(dir, file))
    await fsyncPath(dir)
    const marker = encodeArchiveMarker({
      name: meta.name,
      type: meta.type,
      file,
      sha256: sha256(compressed),
      lastSeq: meta.lastSeq,
      records: meta.lastSeq - meta.firstSeq + 1,
      schema: meta.schema,
      touched: meta.touched,
      archived: now,
      fileSize: compressed.length,
    })
    return { file, marker }
  } catch (error) {
    if (error instanceof ConcordError) throw error
    throw new ConcordError(ErrorCodes.STORAGE_ERROR, `archiving "${meta.name}": ${(error as Error).message}`, { cause: error })
  }
}

/** Reads and checks the archive of a marker; `remove()` deletes the file once its data is back. */
export async function readArchive(dir: string, marker: ArchiveMarker): Promise<{ entries: StorageEntry[]; remove: () => Promise<void> }> {
  const path = join(dir, marker.file)
  let compressed: Uint8Array
  try {
    compressed = new Uint8Array(await readFile(path))
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${marker.name}" cannot be read (${path}): ${(error as Error).message}`, { cause: error })
  }
  if (!bytesEqual(sha256(compressed), marker.sha256)) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${marker.name}" does not match its hash`)
  }
  let raw: Uint8Array
  try {
    raw = new Uint8Array(await gunzipAsync(compressed))
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${marker.name}" does not decompress`, { cause: error })
  }
  return { entries: decodeArchive(marker.name, raw), remove: () => rm(path, { force: true }) }
}

/** Folder of the log segments inside an archive folder. */
const SEGMENTS = 'segments'

/**
 * Writes the segment file of records `fromSeq..toSeq` of `name` durably
 * (temp file, fsync, rename, folder fsync); returns its reference for the
 * segment index (persistence/format/segments.ts).
 */
export async function writeSegment(dir: string, name: string, fromSeq: number, toSeq: number, entries: readonly ArchivedEntry[]): Promise<SegmentRef> {
  try {
    const folder = join(dir, SEGMENTS)
    await mkdir(folder, { recursive: true })
    const file = `${toHex(sha256(new TextEncoder().encode(name))).slice(0, 32)}-${fromSeq.toString(16).padStart(14, '0')}-${toSeq.toString(16).padStart(14, '0')}.concord-segment.gz`
    const compressed = new Uint8Array(await gzipAsync(encodeArchive(name, entries)))
    const temp = join(folder, `${file}.${toHex(randomBytes(4))}.tmp`)
    const handle = await open(temp, 'w')
    try {
      await handle.writeFile(compressed)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, join(folder, file))
    await fsyncPath(folder)
    return { fromSeq, toSeq, file, sha256: sha256(compressed), fileSize: compressed.length }
  } catch (error) {
    if (error instanceof ConcordError) throw error
    throw new ConcordError(ErrorCodes.STORAGE_ERROR, `archiving records ${fromSeq}..${toSeq} of "${name}": ${(error as Error).message}`, { cause: error })
  }
}

/** Reads and checks a segment file: its log entries (key, encoded record), oldest first. `CONCORD_CORRUPT_RECORD` when missing or damaged. */
export async function readSegment(dir: string, name: string, ref: SegmentRef): Promise<ArchivedEntry[]> {
  const path = join(dir, SEGMENTS, ref.file)
  let compressed: Uint8Array
  try {
    compressed = new Uint8Array(await readFile(path))
  } catch (error) {
    throw new ConcordError(
      ErrorCodes.CORRUPT_RECORD,
      `archived records ${ref.fromSeq}..${ref.toSeq} of "${name}" cannot be read (${path}): ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  }
  if (!bytesEqual(sha256(compressed), ref.sha256)) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archived records ${ref.fromSeq}..${ref.toSeq} of "${name}" do not match their hash`)
  }
  let raw: Uint8Array
  try {
    raw = new Uint8Array(await gunzipAsync(compressed))
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archived records ${ref.fromSeq}..${ref.toSeq} of "${name}" do not decompress`, { cause: error })
  }
  return decodeArchive(name, raw)
}

/** Deletes segment files (a deleted or expired name); missing files are ignored. */
export async function removeSegments(dir: string, refs: readonly SegmentRef[]): Promise<void> {
  for (const ref of refs) await rm(join(dir, SEGMENTS, ref.file), { force: true })
}
