/**
 * Archival of cold names: every key of a name is written to one compressed
 * file beside the database, and a small marker replaces them in LevelDB.
 *
 * Archive file (format version 1), gzip-compressed:
 * `u8 version | string name | count | (count segments, strings..., bytes value)* | u32 CRC-32`
 * The file is written to a temporary name, fsynced, renamed, and its folder
 * fsynced before the marker is committed, so a crash leaves either the old
 * state or a complete archive (archive-files.ts; this module is the codecs).
 *
 * Marker under `['a', name]` (format version 1):
 * `u8 version | string name | string type | string file | raw32 sha256(file)
 *  | varuint lastSeq | varuint records | varuint schema | varuint touched
 *  | varuint archived | varuint fileSize | u32 CRC-32`
 */
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { readStoredType } from './stored-type.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { HASH_BYTES, openChecksummed, sealWithChecksum } from './checksum.ts'

/** One key of an archived name with its value (a storage key: a path of strings). */
export interface ArchivedEntry {
  readonly key: readonly string[]
  readonly value: Uint8Array
}

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
  return sealWithChecksum(
    new Encoder()
      .writeUint8(ARCHIVE_VERSION)
      .writeString(m.name)
      .writeString(m.type)
      .writeString(m.file)
      .writeRaw(m.sha256)
      .writeVarUint(m.lastSeq)
      .writeVarUint(m.records)
      .writeVarUint(m.schema)
      .writeVarUint(m.touched)
      .writeVarUint(m.archived)
      .writeVarUint(m.fileSize)
      .finish(),
  )
}

/** Decodes a marker; `CONCORD_CORRUPT_RECORD` if damaged. */
export function decodeArchiveMarker(bytes: Uint8Array): ArchiveMarker {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'archive marker: checksum mismatch or truncated')
  try {
    const d = new Decoder(body)
    d.readVersion(ARCHIVE_VERSION, 'archive marker')
    const marker: ArchiveMarker = {
      name: d.readString(),
      type: readStoredType(d, 'archive marker'),
      file: d.readString(),
      sha256: d.readRaw(HASH_BYTES).slice(),
      lastSeq: d.readVarUint(),
      records: d.readVarUint(),
      schema: d.readVarUint(),
      touched: d.readVarUint(),
      archived: d.readVarUint(),
      fileSize: d.readVarUint(),
    }
    d.end('archive marker')
    return marker
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive marker: ${(error as Error).message}`, { cause: error })
  }
}

/** Encodes the body of a name's archive file (before compression): its entries, checksummed. */
export function encodeArchive(name: string, entries: readonly ArchivedEntry[]): Uint8Array {
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
export function decodeArchive(name: string, bytes: Uint8Array): ArchivedEntry[] {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${name}": checksum mismatch`)
  try {
    const d = new Decoder(body)
    d.readVersion(ARCHIVE_VERSION, 'archive')
    if (d.readString() !== name) throw new Error('the archive belongs to another name')
    const count = d.readCount(2)
    const entries: ArchivedEntry[] = []
    for (let i = 0; i < count; i++) {
      const segments = d.readCount(1)
      const key: string[] = []
      for (let j = 0; j < segments; j++) key.push(d.readString())
      if (key[1] !== name) throw new Error('an archived key belongs to another name')
      entries.push({ key, value: d.readBytes().slice() })
    }
    d.end('archive')
    return entries
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `archive of "${name}": ${(error as Error).message}`, { cause: error })
  }
}
