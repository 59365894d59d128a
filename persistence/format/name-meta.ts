/**
 * Per-name metadata (format version 4 since issue 19; 3 added the state
 * digest). Written when a name is created, with every checkpoint (in the
 * same batch as the trim it allows), on truncation, migration, TTL change
 * and close; NOT with every append. Its log tail (`lastSeq`, `lastHash`,
 * `logBytes`, `touched`) is therefore "as of the last write": the records
 * after `lastSeq` extend it, and hydration derives the tail from the log
 * (FORMAT.md). Version 1 (rewritten with every append) is the special case
 * of a metadata that never lags, and is read as such.
 *
 * Version 4, written by this code:
 *
 * ```
 * u8 version (4) | string type | varuint schema
 * varuint created (ms) | varint touched - created (ms, zigzag)
 * varuint lastSeq | varuint firstSeq (first retained record)
 * varuint logBytes (records after the newest checkpoint) | varuint ttlMs (0 = store default)
 * count, then per checkpoint (oldest first): varuint seq, varuint size
 * u8 digest (0 none, 1 at lastSeq, 2 at digestSeq), then if 2: varuint digestSeq
 * raw32 lastHash | [raw16 digest, if digest != 0]
 * u32 CRC-32 of `string name | everything above`
 * ```
 *
 * The name is its key's (`m / <name>`), not stored: the checksum covers
 * it, so a value read under another key fails it like a damaged one (as a
 * version 4 log record does). Versions 1 to 3, still read:
 *
 * ```
 * u8 version (1 to 3) | string name | string type | varuint schema
 * varuint created (ms) | varuint touched (ms, last write)
 * varuint lastSeq | raw32 lastHash | varuint firstSeq (first retained record)
 * varuint logBytes (records after the newest checkpoint) | varuint ttlMs (0 = store default)
 * count, then per checkpoint (oldest first): varuint seq, varuint size
 * v3: u8 hasDigest (0 | 1), then if 1: varuint digestSeq | raw16 digest
 * u32 CRC-32 of everything above
 * ```
 *
 * The digest (`crdt/state-digest.ts`) is the name's state digest at record
 * `digestSeq`: valid while `digestSeq` equals the name's `lastSeq` (records
 * after it, a tail, make it stale). Versions 1 and 2 have none.
 */
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { readStoredType } from './stored-type.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { HASH_BYTES, openChecksummed, sealEncoder, ZERO_HASH } from './checksum.ts'

/** Current metadata format version. */
export const META_VERSION = 4
/** The last version that stores the name (read, never written). */
const NAMED_META_VERSION = 3

/** One retained checkpoint, as listed in the metadata. */
export interface CheckpointRef {
  readonly seq: number
  readonly size: number
}

/** What the store keeps about a name. Immutable: changes make a new object. */
export interface NameMeta {
  readonly name: string
  readonly type: ReplicaType
  /** Application schema version of the state (migrations). */
  readonly schema: number
  readonly created: number
  readonly touched: number
  readonly lastSeq: number
  readonly lastHash: Uint8Array
  /** Seq of the first retained record (`lastSeq + 1` when none is retained). */
  readonly firstSeq: number
  /** Bytes of the records after the newest checkpoint (what recovery replays). */
  readonly logBytes: number
  /** Time to live in ms; 0 = the store default. */
  readonly ttlMs: number
  /** Retained checkpoints, oldest first. */
  readonly checkpoints: readonly CheckpointRef[]
  /** The state digest at record `seq` (valid while `seq === lastSeq`); absent when unknown (older formats, written mid-change). */
  readonly digest?: StateDigestRef | undefined
}

/** A name's state digest and the record it describes the state at. */
export interface StateDigestRef {
  readonly seq: number
  readonly bytes: Uint8Array
}

/** Bytes of a state digest. */
export const DIGEST_BYTES = 16

/** The digest of `meta` if it describes the state at its `lastSeq`, else undefined. */
export function currentDigest(meta: NameMeta): Uint8Array | undefined {
  return meta.digest && meta.digest.seq === meta.lastSeq ? meta.digest.bytes : undefined
}

/** Metadata of a new, empty name. */
export function newMeta(name: string, type: ReplicaType, schema: number, now: number, ttlMs = 0): NameMeta {
  return { name, type, schema, created: now, touched: now, lastSeq: 0, lastHash: ZERO_HASH, firstSeq: 1, logBytes: 0, ttlMs, checkpoints: [] }
}

const DIGEST_NONE = 0
/** The digest describes the state at `lastSeq` (its seq is not stored). */
const DIGEST_AT_LAST = 1
/** The digest describes the state at an earlier record, stored. */
const DIGEST_AT_SEQ = 2
/** Metadata up to this size is encoded into {@link scratch}, and only the value is copied out (one allocation, not two). */
const SCRATCH_BYTES = 1024
const scratch = new Encoder(SCRATCH_BYTES)

/**
 * Encodes metadata as version 4: the name is not stored, the checksum
 * covers it (`string name | value`), so decode with {@link decodeMeta}'s
 * `name`, the key's.
 */
export function encodeMeta(meta: NameMeta): Uint8Array {
  const digest = meta.digest && meta.digest.bytes.length === DIGEST_BYTES ? meta.digest : undefined
  if (meta.lastHash.length !== HASH_BYTES) throw new RangeError('lastHash must be 32 bytes')
  // The name first (checksummed, then cut off), the value after it; a small one in the scratch buffer (the value is copied out).
  const size = 72 + 3 * meta.name.length + 8 * meta.checkpoints.length
  const encoder = (size <= SCRATCH_BYTES ? scratch.reset() : new Encoder(size)).writeString(meta.name)
  const start = encoder.byteLength
  encoder
    .writeUint8(META_VERSION)
    .writeString(meta.type)
    .writeVarUint(meta.schema)
    .writeVarUint(meta.created)
    .writeVarInt(meta.touched - meta.created)
    .writeVarUint(meta.lastSeq)
    .writeVarUint(meta.firstSeq)
    .writeVarUint(meta.logBytes)
    .writeVarUint(meta.ttlMs)
    .writeVarUint(meta.checkpoints.length)
  for (const cp of meta.checkpoints) encoder.writeVarUint(cp.seq).writeVarUint(cp.size)
  if (!digest) encoder.writeUint8(DIGEST_NONE)
  else if (digest.seq === meta.lastSeq) encoder.writeUint8(DIGEST_AT_LAST)
  else encoder.writeUint8(DIGEST_AT_SEQ).writeVarUint(digest.seq)
  encoder.writeRaw(meta.lastHash)
  if (digest) encoder.writeRaw(digest.bytes)
  return sealEncoder(encoder, start, encoder === scratch)
}

/** The body (without its checksum) of a version 4 metadata stored under `name`, or undefined if its checksum fails. */
function openNamed(bytes: Uint8Array, name: string): Uint8Array | undefined {
  // Framed in the scratch encoder (decodeMeta copies what it keeps: the hash and the digest), not two buffers per value read.
  const size = 8 + 3 * name.length + bytes.length
  const encoder = (size <= SCRATCH_BYTES ? scratch.reset() : new Encoder(size)).writeString(name)
  const start = encoder.byteLength
  return openChecksummed(encoder.writeRaw(bytes).written())?.subarray(start)
}

/**
 * Decodes the metadata stored under `name` (the key's: version 4 does not
 * store it, its checksum covers it; versions 1 to 3 hold their own, which
 * callers compare with the key). `CONCORD_CORRUPT_RECORD` if damaged,
 * `CONCORD_UNSUPPORTED_VERSION` if newer than this code.
 */
export function decodeMeta(bytes: Uint8Array, name: string): NameMeta {
  if (!(bytes instanceof Uint8Array) || bytes.length < 5) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'name metadata: truncated')
  if (bytes[0] > META_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `name metadata: format version ${bytes[0]} is newer than this code`)
  if (bytes[0] !== META_VERSION) return decodeNamedMeta(bytes)
  const body = openNamed(bytes, name)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'name metadata: checksum mismatch or truncated')
  try {
    const d = new Decoder(body)
    d.readUint8()
    const type = readStoredType(d, 'name metadata')
    const schema = d.readVarUint()
    const created = d.readVarUint()
    const touched = created + d.readVarInt()
    if (!Number.isSafeInteger(touched) || touched < 0) throw new Error(`bad touched time ${touched}`)
    const lastSeq = d.readVarUint()
    const firstSeq = d.readVarUint()
    const logBytes = d.readVarUint()
    const ttlMs = d.readVarUint()
    const checkpoints = readCheckpoints(d)
    const flag = d.readUint8()
    if (flag > DIGEST_AT_SEQ) throw new Error(`bad digest flag ${flag}`)
    const digestSeq = flag === DIGEST_AT_SEQ ? d.readVarUint() : lastSeq
    const lastHash = d.readRaw(HASH_BYTES).slice()
    const digest: StateDigestRef | undefined = flag === DIGEST_NONE ? undefined : { seq: digestSeq, bytes: d.readRaw(DIGEST_BYTES).slice() }
    d.end('name metadata')
    return { name, type, schema, created, touched, lastSeq, lastHash, firstSeq, logBytes, ttlMs, checkpoints, ...(digest ? { digest } : {}) }
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `name metadata: ${(error as Error).message}`, { cause: error })
  }
}

function readCheckpoints(d: Decoder): CheckpointRef[] {
  const count = d.readCount(2)
  const checkpoints: CheckpointRef[] = []
  for (let i = 0; i < count; i++) checkpoints.push({ seq: d.readVarUint(), size: d.readVarUint() })
  return checkpoints
}

/**
 * Encodes metadata in the format before version 4 (version 3, the name
 * stored), as code before issue 19 wrote it. The store never writes it any
 * more; tests use it to build old folders.
 */
export function encodeLegacyMeta(meta: NameMeta): Uint8Array {
  const encoder = new Encoder(96 + meta.name.length)
  encoder
    .writeUint8(NAMED_META_VERSION)
    .writeString(meta.name)
    .writeString(meta.type)
    .writeVarUint(meta.schema)
    .writeVarUint(meta.created)
    .writeVarUint(meta.touched)
    .writeVarUint(meta.lastSeq)
    .writeRaw(meta.lastHash)
    .writeVarUint(meta.firstSeq)
    .writeVarUint(meta.logBytes)
    .writeVarUint(meta.ttlMs)
    .writeVarUint(meta.checkpoints.length)
  for (const cp of meta.checkpoints) encoder.writeVarUint(cp.seq).writeVarUint(cp.size)
  if (meta.digest && meta.digest.bytes.length === DIGEST_BYTES) encoder.writeUint8(1).writeVarUint(meta.digest.seq).writeRaw(meta.digest.bytes)
  else encoder.writeUint8(0)
  return sealEncoder(encoder)
}

/** Versions 1 to 3: the name stored, the checksum over the value alone. */
function decodeNamedMeta(bytes: Uint8Array): NameMeta {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'name metadata: checksum mismatch or truncated')
  try {
    const d = new Decoder(body)
    const version = d.readUint8()
    if (version < 1 || version > NAMED_META_VERSION) throw new Error(`unsupported format version ${version}`)
    const name = d.readString()
    const type = readStoredType(d, 'name metadata')
    const schema = d.readVarUint()
    const created = d.readVarUint()
    const touched = d.readVarUint()
    const lastSeq = d.readVarUint()
    const lastHash = d.readRaw(HASH_BYTES).slice()
    const firstSeq = d.readVarUint()
    const logBytes = d.readVarUint()
    const ttlMs = d.readVarUint()
    const checkpoints = readCheckpoints(d)
    let digest: StateDigestRef | undefined
    if (version >= 3) {
      const has = d.readUint8()
      if (has > 1) throw new Error(`bad digest flag ${has}`)
      if (has === 1) digest = { seq: d.readVarUint(), bytes: d.readRaw(DIGEST_BYTES).slice() }
    }
    d.end('name metadata')
    return { name, type, schema, created, touched, lastSeq, lastHash, firstSeq, logBytes, ttlMs, checkpoints, ...(digest ? { digest } : {}) }
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `name metadata: ${(error as Error).message}`, { cause: error })
  }
}
