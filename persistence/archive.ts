/**
 * Archival of cold names: every key of a name is written to one compressed
 * file beside the database, and a small marker replaces them in LevelDB.
 *
 * Archive file (format version 1), gzip-compressed:
 * `u8 version | string name | count | (count segments, strings..., bytes value)* | u32 CRC-32`
 * The file is written to a temporary name, fsynced, renamed, and its folder
 * fsynced before the marker is committed, so a crash leaves either the old
 * state or a complete archive.
 *
 * Marker under `['a', name]` (format version 1):
 * `u8 version | string name | string type | string file | raw32 sha256(file)
 *  | varuint lastSeq | varuint records | varuint schema | varuint touched
 *  | varuint archived | varuint fileSize | u32 CRC-32`
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gunzip, gzip } from 'node:zlib'
import { bytesEqual, Decoder, Encoder } from '../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { readStoredType } from './stored-type.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { HASH_BYTES, openChecksummed, sealWithChecksum, sha256, toHex } from './checksum.ts'
import type { NameMeta } from './name-meta.ts'
import type { StorageEntry, StorageKey } from './storage.ts'

const gzipAsync = promisify(gzip)
const gunzipAsync = promisify(gunzip)

/** Current archive file and marker format version. */
export const ARCHIVE_VERSION = 1

/** The marker left in LevelDB for an archived name. */
export interface ArchiveMarker {
  readonly name: string
  readonly type: ReplicaType
  /** File name inside the archive folder. */
  readonly file: string
  readonly sha256: Uint8Array
  readonly lastSeq: number
  readonly records: number
  readonly schema: number
  readonly touched: number
  readonly archived: number
  readonly fileSize: number
}

/** Encodes a marker. */
export function encodeArchiveMarker(m: ArchiveMarker): Uint8Array {
  return sealWithChecksum(new Encoder().writeUint8(ARCHIVE_VERSION).writeString(m.name).writeString(m.type).writeString(m.file)
    .writeRaw(m.sha256).writeVarUint(m.lastSeq).writeVarUint(m.records).writeVarUint(m.schema).writeVarUint(m.touched)
    .writeVarUint(m.archived).writeVarUint(m.fileSize).finish())
}

/** Decodes a marker; `CONCORD_CORRUPT_RECORD` if damaged. */
export function decodeArchiveMarker(bytes: Uint8Array): ArchiveMarker {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'archive marker: checksum mismatch or truncated')
  try {
    const d = new Decoder(body)
    d.readVersion(ARCHIVE_VERSION, 'archive marker')
    const marker: ArchiveMarker = {
      name: d.readString(), type: readStoredType(d, 'archive marker'), file: d.readString(), sha256: d.readRaw(HASH_BYTES).slice(),
      lastSeq: d.readVarUint(), records: d.readVarUint(), schema: d.readVarUint(), touched: d.readVarUint(),
      archived: d.readVarUint(), fileSize: d.readVarUint(),
    }
    d.end('archive marker')
    return marker
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive marker: ${(error as Error).message}`, { cause: error })
  }
}

/** Encodes the body of a name's archive file (before compression): its entries, checksummed. */
export function encodeArchive(name: string, entries: readonly StorageEntry[]): Uint8Array {
  const encoder = new Encoder(1024)
  encoder.writeUint8(ARCHIVE_VERSION).writeString(name).writeVarUint(entries.length)
  for (const entry of entries) {
    encoder.writeVarUint(entry.key.length)
    for (const segment of entry.key) encoder.writeString(segment)
    encoder.writeBytes(entry.value)
  }
  return sealWithChecksum(encoder.finish())
}

/** Decodes the body of `name`'s archive file; `CONCORD_CORRUPT_RECORD` if damaged or of another name. */
export function decodeArchive(name: string, bytes: Uint8Array): StorageEntry[] {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${name}": checksum mismatch`)
  try {
    const d = new Decoder(body)
    d.readVersion(ARCHIVE_VERSION, 'archive')
    if (d.readString() !== name) throw new Error('the archive belongs to another name')
    const count = d.readCount(2)
    const entries: StorageEntry[] = []
    for (let i = 0; i < count; i++) {
      const segments = d.readCount(1)
      const key: string[] = []
      for (let j = 0; j < segments; j++) key.push(d.readString())
      if (key[1] !== name) throw new Error('an archived key belongs to another name')
      entries.push({ key: key as StorageKey, value: d.readBytes().slice() })
    }
    d.end('archive')
    return entries
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${name}": ${(error as Error).message}`, { cause: error })
  }
}

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
      name: meta.name, type: meta.type, file, sha256: sha256(compressed), lastSeq: meta.lastSeq,
      records: meta.lastSeq - meta.firstSeq + 1, schema: meta.schema, touched: meta.touched, archived: now, fileSize: compressed.length,
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
