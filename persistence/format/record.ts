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
import { Decoder } from '../../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../../crdt/errors.ts'
import { readHlc, type HlcTimestamp } from '../../crdt/hlc.ts'
import { checksum, HASH_BYTES, openChecksummed, sha256 } from './checksum.ts'

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

const textEncoder = new TextEncoder()
/** UTF-8 of the names and agents seen lately (they repeat on every record). */
const utf8Cache = new Map<string, Uint8Array>()

function utf8(value: string): Uint8Array {
  let bytes = utf8Cache.get(value)
  if (!bytes) {
    if (utf8Cache.size >= 4096) utf8Cache.clear()
    bytes = textEncoder.encode(value)
    if (value.length <= 1024) utf8Cache.set(value, bytes)
  }
  return bytes
}

function varUintSize(value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`writeVarUint: ${value} is not a safe unsigned integer`)
  let size = 1
  while (value > 0x7f) {
    value = Math.floor(value / 0x80)
    size++
  }
  return size
}

function putVarUint(out: Uint8Array, offset: number, value: number): number {
  while (value > 0x7f) {
    out[offset++] = (value % 0x80) | 0x80
    value = Math.floor(value / 0x80)
  }
  out[offset++] = value
  return offset
}

/**
 * Encodes a record (checksum appended). Byte for byte what an `Encoder`
 * would write, but sized first and written once: the payload is copied
 * once, into the record.
 */
export function encodeRecord(record: LogRecord): Uint8Array {
  if (record.prevHash.length !== HASH_BYTES) throw new RangeError('prevHash must be 32 bytes')
  const name = utf8(record.name)
  const agent = utf8(record.agent)
  const { payload, seq, hlc } = record
  const size =
    1 +
    varUintSize(name.length) +
    name.length +
    varUintSize(seq) +
    varUintSize(hlc.wall) +
    varUintSize(hlc.logical) +
    varUintSize(agent.length) +
    agent.length +
    1 +
    HASH_BYTES +
    varUintSize(payload.length) +
    payload.length +
    4
  const out = new Uint8Array(size)
  out[0] = RECORD_VERSION
  let offset = putVarUint(out, 1, name.length)
  out.set(name, offset)
  offset = putVarUint(out, offset + name.length, seq)
  offset = putVarUint(out, offset, hlc.wall)
  offset = putVarUint(out, offset, hlc.logical)
  offset = putVarUint(out, offset, agent.length)
  out.set(agent, offset)
  offset += agent.length
  out[offset++] = record.kind === 'state' ? 1 : 0
  out.set(record.prevHash, offset)
  offset = putVarUint(out, offset + HASH_BYTES, payload.length)
  out.set(payload, offset)
  offset += payload.length
  new DataView(out.buffer, out.byteOffset, out.byteLength).setUint32(offset, checksum(out.subarray(0, offset)))
  return out
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
