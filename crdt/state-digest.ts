/**
 * The state digest of a name: 16 bytes that two replicas of one name share
 * when their states are equal, read by range-based reconciliation
 * (sync/reconcile.ts) and kept in the store's metadata so that it is known
 * without hydrating the name.
 *
 * It is SHA-256 (first 16 bytes) over the name, its type, its `version()`
 * and what a replica at that version would still lack, `deltaSince(version)`
 * (empty when null). The second part is what a version leaves out: a Yjs
 * state vector does not record deletions, and `deltaSince` of its own state
 * vector is the delete set. Equal states give equal digests as long as the
 * replica's encodings are canonical; unequal digests of equal states cost
 * an exchange, never a miss.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { Encoder } from './codec.ts'
import type { Replica, ReplicaType } from './replica.ts'

const NO_BYTES = new Uint8Array(0)
/** Inputs up to this size are written into {@link scratch} (a digest's input never outlives the call). */
const SCRATCH_BYTES = 4096
const scratch = new Encoder(SCRATCH_BYTES)

/** Bytes of a state digest. */
export const STATE_DIGEST_BYTES = 16

/** A SHA-256 function: @noble/hashes here; a store passes Node's native one (persistence/format/digest.ts), same bytes. It must not keep its input (a reused buffer). */
export type Sha256 = (bytes: Uint8Array) => Uint8Array

/** The state digest of `name` of `type` from its version and what that version still lacks (`null`: nothing). */
export function stateDigest(name: string, type: ReplicaType, version: Uint8Array, rest: Uint8Array | null, hash: Sha256 = sha256): Uint8Array {
  const size = 64 + name.length + version.length + (rest?.length ?? 0)
  // The input is hashed and dropped: a small one is written into one scratch buffer (no allocation per digest).
  const encoder = size <= SCRATCH_BYTES ? scratch.reset() : new Encoder(size)
  const input = encoder
    .writeString('concord-state-digest')
    .writeString(name)
    .writeString(type)
    .writeBytes(version)
    .writeBytes(rest ?? NO_BYTES)
    .written()
  return hash(input).slice(0, STATE_DIGEST_BYTES)
}

/** The state digest of a replica of `name` (`hash`: see {@link stateDigest}). */
export function replicaDigest(name: string, replica: Replica, hash: Sha256 = sha256): Uint8Array {
  const version = replica.version()
  // A native type's own version lacks nothing (Replica.ownVersionComplete): the same bytes without computing it.
  return stateDigest(name, replica.type, version, replica.ownVersionComplete === true ? null : replica.deltaSince(version), hash)
}
