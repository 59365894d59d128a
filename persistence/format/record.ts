/**
 * The log record format (versions 1 to 4). One record per appended delta.
 * This code writes version 4 (since issue 19):
 *
 * ```
 * u8      format version (4)
 * hlc     time           (wall varuint, logical varuint)
 * string  agent          (the agent id that wrote the record)
 * u8      kind           (0 delta, 1 full state written after a failed write)
 * bytes   delta
 * u8      flags          (bit 0 message, bit 1 meta, bit 2 authored, bit 3 signature, bit 4 public key; other bits 0)
 * [string message] [string meta] [hlc authored] [raw64 signature] [raw32 public key]  (as flagged)
 * u32     CRC-32 of `string name | varuint seq | everything above` (big-endian)
 * ```
 *
 * A version 4 record holds neither its name nor its seq (its key does:
 * the checksum covers them, so a record under another key fails it) nor
 * the hash of the record before it: its hash is derived,
 * SHA-256(`raw32 prevHash | string name | varuint seq | the whole record`),
 * so the chain is the same chain, computed on read from the previous
 * record's hash instead of stored (32 bytes that do not compress, per
 * record). Versions 1 to 3, still read:
 *
 * ```
 * u8      format version (1; 2 when the record has provenance beyond its agent; 3 when it is signed)
 * string  name
 * varuint seq            (1, 2, 3, ... per name, no holes)
 * hlc     time           (wall varuint, logical varuint)
 * string  agent          (the agent id that wrote the record)
 * u8      kind           (0 delta, 1 full state written after a failed write)
 * raw32   prevHash       (SHA-256 of the previous record of the name; zeros for seq 1)
 * bytes   delta          (the delta; a state record: the whole state as a delta)
 * -- versions 2 and 3 only:
 * u8      flags          (bit 0: message, bit 1: meta, bit 2: authored; version 3: bit 3 signature, bit 4 public key; other bits 0)
 * string  message        (if bit 0: why the change was made)
 * string  meta           (if bit 1: canonical JSON of an object: tool, session, model, causedBy, ...)
 * hlc     authored       (if bit 2: when the author made it, for a change made elsewhere; `time` is when it was logged here)
 * raw64   signature      (if bit 3: the author's Ed25519 signature, crdt/signature.ts)
 * raw32   public key     (if bit 4: the author's Ed25519 public key, when its id is not the key's PeerId)
 * --
 * u32     CRC-32 of everything above (big-endian)
 * ```
 *
 * `agent` is the author of the change (the agent that made it, not the
 * peer that relayed it). Code before version 4 wrote a record without
 * message or meta as version 1, an unsigned one as version 2.
 *
 * The hash of a version 1 to 3 record is the SHA-256 of all of its bytes,
 * checksum included (its stored prevHash links it to the one before).
 */
import { Decoder } from '../../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../../crdt/errors.ts'
import { readHlc, type HlcTimestamp } from '../../crdt/hlc.ts'
import { PUBLIC_KEY_BYTES, type RecordSignature, SIGNATURE_BYTES } from '../../crdt/signature.ts'
import { putCrc32 } from '../../crdt/types/crc32.ts'
import { checksum, HASH_BYTES, openChecksummed, sha256 } from './checksum.ts'

/** Newest record format version, the one this code writes (no stored name, seq or previous hash). */
export const RECORD_VERSION = 4
/** The signed version before the derived chain. */
const SIGNED_RECORD_VERSION = 3
/** The version of a record with no message or meta. */
const PLAIN_RECORD_VERSION = 1
/** The version of an unsigned record with provenance. */
const PROVENANCE_RECORD_VERSION = 2
const FLAG_MESSAGE = 1
const FLAG_META = 2
const FLAG_AUTHORED = 4
const FLAG_SIGNATURE = 8
const FLAG_PUBLIC_KEY = 16

/** What a record holds. */
export type RecordKind = 'delta' | 'state'

/** A decoded log record. */
export interface LogRecord {
  readonly name: string
  readonly seq: number
  readonly hlc: HlcTimestamp
  readonly agent: string
  readonly kind: RecordKind
  /**
   * SHA-256 of the previous record of the name (zeros for seq 1): stored in
   * versions 1 to 3; for version 4 the reader's (what it was decoded with),
   * {@link UNCHAINED} when it was read out of the chain.
   */
  readonly prevHash: Uint8Array
  /** The delta bytes (a `state` record: the whole state, as a delta). */
  readonly delta: Uint8Array
  /** Why the change was made (version 2). */
  readonly message?: string | undefined
  /** Application metadata as canonical JSON of an object (version 2). */
  readonly metaJson?: string | undefined
  /** When the author made the change, if elsewhere (version 2); `hlc` is when it was logged here. */
  readonly authored?: HlcTimestamp | undefined
  /** The author's signature (version 3). */
  readonly signature?: RecordSignature | undefined
}

/** A record with its hash and encoded size. */
export interface StoredRecord extends LogRecord {
  /** The record's hash (see the module comment); {@link UNCHAINED} for a version 4 record read without its previous hash. */
  readonly hash: Uint8Array
  /** Size of the encoded record in bytes. */
  readonly size: number
}

const textEncoder = new TextEncoder()
/** UTF-8 of the names and agents seen lately (they repeat on every record). */
const utf8Cache = new Map<string, Uint8Array>()

/**
 * The bytes of an ASCII `value` (its UTF-8), else undefined: made in
 * JavaScript, a short one lives in the heap, where TextEncoder's output has
 * an ArrayBuffer of its own (0.2-0.3 us against 0.5-0.6 us per name of 12
 * characters, and less for the GC; a first sync writes thousands of names
 * seen once).
 */
function asciiBytes(value: string): Uint8Array | undefined {
  const length = value.length
  const out = new Uint8Array(length)
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i)
    if (code > 0x7f) return undefined
    out[i] = code
  }
  return out
}

function utf8(value: string): Uint8Array {
  let bytes = utf8Cache.get(value)
  if (!bytes) {
    if (utf8Cache.size >= 4096) utf8Cache.clear()
    bytes = asciiBytes(value) ?? textEncoder.encode(value)
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

/** A record's provenance fields (message, meta, authored, signature) as stored after its delta: flags byte, then each present one. */
function provenanceFields(record: LogRecord): { size: number; write(out: Uint8Array, offset: number): number } {
  const message = record.message === undefined ? undefined : textEncoder.encode(record.message)
  const meta = record.metaJson === undefined ? undefined : textEncoder.encode(record.metaJson)
  const { authored, signature } = record
  if (signature && (signature.signature.length !== SIGNATURE_BYTES || (signature.publicKey && signature.publicKey.length !== PUBLIC_KEY_BYTES))) {
    throw new RangeError('a signature has 64 bytes, its public key 32')
  }
  return {
    size:
      1 +
      (message ? varUintSize(message.length) + message.length : 0) +
      (meta ? varUintSize(meta.length) + meta.length : 0) +
      (authored ? varUintSize(authored.wall) + varUintSize(authored.logical) : 0) +
      (signature ? SIGNATURE_BYTES + (signature.publicKey ? PUBLIC_KEY_BYTES : 0) : 0),
    write(out, offset) {
      out[offset++] =
        (message ? FLAG_MESSAGE : 0) |
        (meta ? FLAG_META : 0) |
        (authored ? FLAG_AUTHORED : 0) |
        (signature ? FLAG_SIGNATURE : 0) |
        (signature?.publicKey ? FLAG_PUBLIC_KEY : 0)
      for (const field of [message, meta]) {
        if (!field) continue
        offset = putVarUint(out, offset, field.length)
        out.set(field, offset)
        offset += field.length
      }
      if (authored) {
        offset = putVarUint(out, offset, authored.wall)
        offset = putVarUint(out, offset, authored.logical)
      }
      if (signature) {
        out.set(signature.signature, offset)
        offset += SIGNATURE_BYTES
        if (signature.publicKey) {
          out.set(signature.publicKey, offset)
          offset += PUBLIC_KEY_BYTES
        }
      }
      return offset
    },
  }
}

/**
 * Encodes a record in the format before version 4 (version 1, 2 or 3, as
 * code before issue 19 wrote it: name, seq and `prevHash` stored). The
 * store never writes it any more; tests and fixtures use it to build old
 * folders.
 */
export function encodeLegacyRecord(record: LogRecord): Uint8Array {
  if (record.prevHash.length !== HASH_BYTES) throw new RangeError('prevHash must be 32 bytes')
  const name = utf8(record.name)
  const agent = utf8(record.agent)
  const { delta, seq, hlc, signature } = record
  const provenance = provenanceFields(record)
  const extended = record.message !== undefined || record.metaJson !== undefined || record.authored !== undefined || signature !== undefined
  const extra = extended ? provenance.size : 0
  const size =
    extra +
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
    varUintSize(delta.length) +
    delta.length +
    4
  const out = new Uint8Array(size)
  out[0] = signature ? SIGNED_RECORD_VERSION : extended ? PROVENANCE_RECORD_VERSION : PLAIN_RECORD_VERSION
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
  offset = putVarUint(out, offset + HASH_BYTES, delta.length)
  out.set(delta, offset)
  offset += delta.length
  if (extended) offset = provenance.write(out, offset)
  new DataView(out.buffer, out.byteOffset, out.byteLength).setUint32(offset, checksum(out.subarray(0, offset)))
  return out
}

/** Where a record sits in its log: a version 4 record's name and seq are its key's, its hash needs the previous one. */
export interface RecordPlace {
  readonly name: string
  readonly seq: number
  /** The hash of record `seq - 1` ({@link ZERO_HASH} before seq 1); without it a version 4 record's hash is {@link UNCHAINED}. */
  readonly prevHash?: Uint8Array | undefined
}

/** The hash of a version 4 record read without the previous record's hash (empty: never equal to a real one). */
export const UNCHAINED: Uint8Array = new Uint8Array(0)

/** `string name | varuint seq`: what a version 4 record's checksum and hash cover beside its bytes. */
function placeHeader(name: Uint8Array, seq: number): { size: number; write(out: Uint8Array, offset: number): number } {
  return {
    size: varUintSize(name.length) + name.length + varUintSize(seq),
    write(out, offset) {
      offset = putVarUint(out, offset, name.length)
      out.set(name, offset)
      return putVarUint(out, offset + name.length, seq)
    },
  }
}

/**
 * Encodes a record as version 4 (checksum appended; `prevHash` is not
 * stored: {@link recordHash} derives the record's hash from it). Sized
 * first and written once: the delta is copied once, into the record.
 */
export function encodeRecord(record: LogRecord): Uint8Array {
  const { framed, start } = frameRecord(record, 0)
  return framed.subarray(start)
}

/**
 * {@link encodeRecord} and {@link recordHash} of the record at once, in one
 * buffer: the previous hash, the place header and the record, so that the
 * hash input is the buffer itself (no second buffer, no copy of the record).
 */
export function encodeHashedRecord(record: LogRecord): { readonly bytes: Uint8Array; readonly hash: Uint8Array } {
  // Framed in a scratch buffer (hashed, then dropped) when it fits; the record is copied out at its size.
  const { framed, start } = frameRecord(record, HASH_BYTES, frameScratch)
  framed.set(record.prevHash)
  const hash = sha256(framed)
  return { bytes: framed.buffer === frameScratch.buffer ? framed.slice(start) : framed.subarray(start), hash }
}

/**
 * Where {@link encodeHashedRecord} frames a record of up to its size: the
 * frame (previous hash, place header, record) is only hashed, so a new
 * buffer per record (one outside the heap, as a frame is over 64 bytes)
 * would be garbage at once; the record is copied out of it.
 */
const frameScratch = new Uint8Array(4096)

/** `lead` free bytes, the place header, then the record as version 4 (checksummed over the header and the record); `start`: where the record begins; in `scratch` (zeroed) when it fits. */
function frameRecord(record: LogRecord, lead: number, scratch?: Uint8Array): { framed: Uint8Array; start: number } {
  const agent = utf8(record.agent)
  const { delta, hlc } = record
  const provenance = provenanceFields(record)
  const header = placeHeader(utf8(record.name), record.seq)
  const size =
    1 +
    varUintSize(hlc.wall) +
    varUintSize(hlc.logical) +
    varUintSize(agent.length) +
    agent.length +
    1 +
    varUintSize(delta.length) +
    delta.length +
    provenance.size +
    4
  // One buffer: the place header (covered by the checksum, not stored), then the record.
  const total = lead + header.size + size
  // A scratch buffer is zeroed first: the frame is then what a new buffer would hold.
  const framed = scratch !== undefined && total <= scratch.length ? scratch.fill(0, 0, total).subarray(0, total) : new Uint8Array(total)
  const start = header.write(framed, lead)
  framed[start] = RECORD_VERSION
  let offset = putVarUint(framed, start + 1, hlc.wall)
  offset = putVarUint(framed, offset, hlc.logical)
  offset = putVarUint(framed, offset, agent.length)
  framed.set(agent, offset)
  offset += agent.length
  framed[offset++] = record.kind === 'state' ? 1 : 0
  offset = putVarUint(framed, offset, delta.length)
  framed.set(delta, offset)
  offset = provenance.write(framed, offset + delta.length)
  putCrc32(framed, offset, framed.subarray(lead, offset), checksum)
  return { framed, start }
}

/**
 * The hash of the record `bytes` at `place` whose previous record hashes to
 * `prevHash`: the SHA-256 of its bytes for versions 1 to 3 (their stored
 * `prevHash` is checked by the reader), the derived hash for version 4.
 */
export function recordHash(bytes: Uint8Array, name: string, seq: number, prevHash: Uint8Array): Uint8Array {
  if (bytes[0] !== RECORD_VERSION) return sha256(bytes)
  const header = placeHeader(utf8(name), seq)
  const input = new Uint8Array(HASH_BYTES + header.size + bytes.length)
  input.set(prevHash)
  input.set(bytes, header.write(input, HASH_BYTES))
  return sha256(input)
}

/**
 * Decodes and checks a record: a bad checksum, a truncated or malformed
 * record throws `CONCORD_CORRUPT_RECORD`; a newer format version throws
 * `CONCORD_UNSUPPORTED_VERSION`. A version 4 record needs its `place` (its
 * name and seq are its key's; its checksum covers them, so one read under
 * another key fails as damaged) and, for its hash, the previous record's
 * hash (`place.prevHash`; else `hash` is {@link UNCHAINED}). For versions
 * 1 to 3 the name, seq and prevHash are the record's own (callers check
 * them against the key and the chain).
 */
export function decodeRecord(bytes: Uint8Array, place?: RecordPlace): StoredRecord {
  if (!(bytes instanceof Uint8Array) || bytes.length < 5) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'log record: truncated')
  if (bytes[0] > RECORD_VERSION) {
    throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `log record: format version ${bytes[0]} is newer than this code (${RECORD_VERSION})`)
  }
  if (bytes[0] !== RECORD_VERSION) return decodeLegacyRecord(bytes)
  if (!place) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'log record: a version 4 record is read with its key (name and seq)')
  const header = placeHeader(utf8(place.name), place.seq)
  // [prevHash | name | seq | record]: the checksum covers from the name on, the hash all of it.
  const framed = new Uint8Array(HASH_BYTES + header.size + bytes.length)
  if (place.prevHash) framed.set(place.prevHash)
  const start = header.write(framed, HASH_BYTES)
  framed.set(bytes, start)
  const body = openChecksummed(framed.subarray(HASH_BYTES))
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'log record: checksum mismatch or truncated')
  try {
    const decoder = new Decoder(body.subarray(start - HASH_BYTES))
    decoder.readUint8()
    const hlc = readHlc(decoder)
    const agent = decoder.readString()
    const kindByte = decoder.readUint8()
    if (kindByte > 1) throw new DecodeError(`log record: unknown kind ${kindByte}`)
    const delta = decoder.readBytes()
    const flags = decoder.readUint8()
    const extras = readExtras(decoder, flags, FLAG_SIGNATURE | FLAG_PUBLIC_KEY)
    decoder.end('log record')
    const chained = place.prevHash !== undefined
    const record: StoredRecord = {
      name: place.name,
      seq: place.seq,
      hlc,
      agent,
      kind: kindByte === 1 ? 'state' : 'delta',
      prevHash: chained ? place.prevHash! : UNCHAINED,
      delta,
      hash: chained ? sha256(framed) : UNCHAINED,
      size: bytes.length,
    }
    return withExtras(record, extras)
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `log record: ${(error as Error).message}`, { cause: error })
  }
}

interface RecordExtras {
  message?: string
  metaJson?: string
  authored?: HlcTimestamp
  signature?: RecordSignature
}

/** The flagged fields after the delta; `signing`: the signature flags this version knows. */
function readExtras(decoder: Decoder, flags: number, signing: number): RecordExtras {
  const known = FLAG_MESSAGE | FLAG_META | FLAG_AUTHORED | signing
  if (flags & ~known) throw new DecodeError(`log record: unknown flags ${flags}`)
  if (flags & FLAG_PUBLIC_KEY && !(flags & FLAG_SIGNATURE)) throw new DecodeError('log record: a public key without a signature')
  const extras: RecordExtras = {}
  if (flags & FLAG_MESSAGE) extras.message = decoder.readString()
  if (flags & FLAG_META) extras.metaJson = decoder.readString()
  if (flags & FLAG_AUTHORED) extras.authored = readHlc(decoder)
  if (flags & FLAG_SIGNATURE) {
    const sig = decoder.readRaw(SIGNATURE_BYTES).slice()
    extras.signature = flags & FLAG_PUBLIC_KEY ? { signature: sig, publicKey: decoder.readRaw(PUBLIC_KEY_BYTES).slice() } : { signature: sig }
  }
  return extras
}

function withExtras(record: StoredRecord, extras: RecordExtras): StoredRecord {
  const { message, metaJson, authored, signature } = extras
  if (message === undefined && metaJson === undefined && authored === undefined && signature === undefined) return record
  return signature === undefined ? { ...record, message, metaJson, authored } : { ...record, message, metaJson, authored, signature }
}

/** Versions 1 to 3: name, seq and prevHash stored; the hash is the SHA-256 of the bytes. */
function decodeLegacyRecord(bytes: Uint8Array): StoredRecord {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'log record: checksum mismatch or truncated')
  try {
    const decoder = new Decoder(body)
    const version = decoder.readUint8()
    if (version !== PLAIN_RECORD_VERSION && version !== PROVENANCE_RECORD_VERSION && version !== SIGNED_RECORD_VERSION)
      throw new DecodeError(`log record: unsupported format version ${version}`)
    const name = decoder.readString()
    const seq = decoder.readVarUint()
    const hlc = readHlc(decoder)
    const agent = decoder.readString()
    const kindByte = decoder.readUint8()
    if (kindByte > 1) throw new DecodeError(`log record: unknown kind ${kindByte}`)
    const prevHash = decoder.readRaw(HASH_BYTES)
    const delta = decoder.readBytes()
    let extras: RecordExtras = {}
    if (version !== PLAIN_RECORD_VERSION) {
      const flags = decoder.readUint8()
      if (version === SIGNED_RECORD_VERSION && !(flags & FLAG_SIGNATURE)) throw new DecodeError('log record: a version 3 record is signed')
      extras = readExtras(decoder, flags, version === SIGNED_RECORD_VERSION ? FLAG_SIGNATURE | FLAG_PUBLIC_KEY : 0)
    }
    decoder.end('log record')
    const record: StoredRecord = { name, seq, hlc, agent, kind: kindByte === 1 ? 'state' : 'delta', prevHash, delta, hash: sha256(bytes), size: bytes.length }
    return withExtras(record, extras)
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `log record: ${(error as Error).message}`, { cause: error })
  }
}
