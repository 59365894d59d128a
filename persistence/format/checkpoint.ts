/**
 * The checkpoint format (version 1): the joined state of a name at a seq.
 *
 * ```
 * u8 version (1) | string name | string type | varuint seq
 * raw32 hash (of the record at seq: the hash chain continues from it)
 * varuint schema | hlc time | bytes snapshot | u32 CRC-32
 * ```
 */
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { readStoredType } from './stored-type.ts'
import { readHlc, writeHlc, type HlcTimestamp } from '../../crdt/hlc.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { HASH_BYTES, openChecksummed, sealWithChecksum } from './checksum.ts'

/** Current checkpoint format version. */
export const CHECKPOINT_VERSION = 1

/** A decoded checkpoint. */
export interface Checkpoint {
  readonly name: string
  readonly type: ReplicaType
  readonly seq: number
  readonly hash: Uint8Array
  readonly schema: number
  readonly hlc: HlcTimestamp
  readonly snapshot: Uint8Array
}

/** Encodes a checkpoint. */
export function encodeCheckpoint(cp: Checkpoint): Uint8Array {
  const encoder = new Encoder(64 + cp.snapshot.length)
  encoder.writeUint8(CHECKPOINT_VERSION).writeString(cp.name).writeString(cp.type).writeVarUint(cp.seq).writeRaw(cp.hash).writeVarUint(cp.schema)
  writeHlc(encoder, cp.hlc)
  encoder.writeBytes(cp.snapshot)
  return sealWithChecksum(encoder.finish())
}

/** Decodes a checkpoint; `CONCORD_CORRUPT_RECORD` if damaged. */
export function decodeCheckpoint(bytes: Uint8Array): Checkpoint {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'checkpoint: checksum mismatch or truncated')
  if (body[0] > CHECKPOINT_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `checkpoint: format version ${body[0]} is newer than this code`)
  try {
    const d = new Decoder(body)
    d.readVersion(CHECKPOINT_VERSION, 'checkpoint')
    const name = d.readString()
    const type = readStoredType(d, 'checkpoint')
    const seq = d.readVarUint()
    const hash = d.readRaw(HASH_BYTES)
    const schema = d.readVarUint()
    const hlc = readHlc(d)
    const snapshot = d.readBytes()
    d.end('checkpoint')
    return { name, type, seq, hash, schema, hlc, snapshot }
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `checkpoint: ${(error as Error).message}`, { cause: error })
  }
}
