/**
 * Per-name metadata (format version 3; 3 adds the state digest). Written when a name is created, with
 * every checkpoint (in the same batch as the trim it allows), on truncation,
 * migration, TTL change and close; NOT with every append. Its log tail
 * (`lastSeq`, `lastHash`, `logBytes`, `touched`) is therefore "as of the last
 * write": the records after `lastSeq` extend it, and hydration derives the
 * tail from the log (FORMAT.md). Version 1 (rewritten with every append) is
 * the special case of a metadata that never lags, and is read as such.
 *
 * ```
 * u8 version (2) | string name | string type | varuint schema
 * varuint created (ms) | varuint touched (ms, last write)
 * varuint lastSeq | raw32 lastHash | varuint firstSeq (first retained record)
 * varuint logBytes (records after the newest checkpoint) | varuint ttlMs (0 = store default)
 * count, then per checkpoint (oldest first): varuint seq, varuint size
 * v3: u8 hasDigest (0 | 1), then if 1: varuint digestSeq | raw16 digest
 * u32 CRC-32
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
export const META_VERSION = 3

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

/** Encodes metadata. */
export function encodeMeta(meta: NameMeta): Uint8Array {
  const encoder = new Encoder(96 + meta.name.length)
  encoder
    .writeUint8(META_VERSION)
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

/** Decodes metadata; `CONCORD_CORRUPT_RECORD` if damaged. */
export function decodeMeta(bytes: Uint8Array): NameMeta {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'name metadata: checksum mismatch or truncated')
  if (body[0] > META_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `name metadata: format version ${body[0]} is newer than this code`)
  try {
    const d = new Decoder(body)
    const version = d.readUint8()
    if (version < 1) throw new Error(`unsupported format version ${version}`)
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
    const count = d.readCount(2)
    const checkpoints: CheckpointRef[] = []
    for (let i = 0; i < count; i++) checkpoints.push({ seq: d.readVarUint(), size: d.readVarUint() })
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
