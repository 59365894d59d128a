/**
 * The log record format (version 1). One record per appended delta:
 *
 * ```
 * u8      format version (1)
 * string  name
 * varuint seq            (1, 2, 3, ... per name, no holes)
 * hlc     time           (wall varuint, logical varuint)
 * string  agent          (the replica id that wrote the record)
 * u8      kind           (0 delta, 1 full state written after a failed write)
 * raw32   prevHash       (SHA-256 of the previous record of the name; zeros for seq 1)
 * bytes   payload        (the delta)
 * u32     CRC-32 of everything above (big-endian)
 * ```
 *
 * The record's hash is the SHA-256 of all of its bytes, checksum included.
 */
import { Decoder, Encoder } from '../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../crdt/errors.ts'
import { readHlc, writeHlc, type HlcTimestamp } from '../crdt/hlc.ts'
import { HASH_BYTES, openChecksummed, sealWithChecksum, sha256 } from './checksum.ts'

/** Current record format version. */
export const RECORD_VERSION = 1

/** What a record holds. */
export type RecordKind = 'delta' | 'state'

/** A decoded log record. */
export interface LogRecord {
  readonly name: string
  readonly seq: number
  readonly hlc: HlcTimestamp
  readonly agent: string
  readonly kind: RecordKind
  readonly prevHash: Uint8Array
  readonly payload: Uint8Array
}

/** A record with its hash and encoded size. */
export interface StoredRecord extends LogRecord {
  /** SHA-256 of the encoded record. */
  readonly hash: Uint8Array
  /** Size of the encoded record in bytes. */
  readonly size: number
}

/** Encodes a record (checksum appended). */
export function encodeRecord(record: LogRecord): Uint8Array {
  if (record.prevHash.length !== HASH_BYTES) throw new RangeError('prevHash must be 32 bytes')
  const encoder = new Encoder(64 + record.payload.length + record.name.length)
  encoder.writeUint8(RECORD_VERSION).writeString(record.name).writeVarUint(record.seq)
  writeHlc(encoder, record.hlc)
  encoder.writeString(record.agent).writeUint8(record.kind === 'state' ? 1 : 0).writeRaw(record.prevHash).writeBytes(record.payload)
  return sealWithChecksum(encoder.finish())
}

/**
 * Decodes and checks a record: a bad checksum, a truncated or malformed
 * record throws `CONCORD_CORRUPT_RECORD`; a newer format version throws
 * `CONCORD_UNSUPPORTED_VERSION`.
 */
export function decodeRecord(bytes: Uint8Array): StoredRecord {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'log record: checksum mismatch or truncated')
  if (body[0] > RECORD_VERSION) {
    throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `log record: format version ${body[0]} is newer than this code (${RECORD_VERSION})`)
  }
  try {
    const decoder = new Decoder(body)
    decoder.readVersion(RECORD_VERSION, 'log record')
    const name = decoder.readString()
    const seq = decoder.readVarUint()
    const hlc = readHlc(decoder)
    const agent = decoder.readString()
    const kindByte = decoder.readUint8()
    if (kindByte > 1) throw new DecodeError(`log record: unknown kind ${kindByte}`)
    const prevHash = decoder.readRaw(HASH_BYTES)
    const payload = decoder.readBytes()
    decoder.end('log record')
    return { name, seq, hlc, agent, kind: kindByte === 1 ? 'state' : 'delta', prevHash, payload, hash: sha256(bytes), size: bytes.length }
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `log record: ${(error as Error).message}`, { cause: error })
  }
}
