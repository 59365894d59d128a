/**
 * Merging native deltas: the join of several deltas of one type is itself a
 * delta, and joining it into any state gives what joining them one by one
 * gives (join is associative, commutative and idempotent). Used to log or
 * ship a run of local changes as one delta.
 */
import { joinStoreInto } from '../causal/dot-store.ts'
import { decodeState, encodeState } from './state-codec.ts'
import type { NativeType } from '../catalog.ts'

/**
 * Joins encoded deltas of `type` into one encoded delta. Throws DecodeError
 * when one of them is not a valid delta of `type`, RangeError when there is
 * none. A single delta is returned as it is.
 */
export function mergeNativeDeltas(type: NativeType, deltas: readonly Uint8Array[]): Uint8Array {
  if (deltas.length === 0) throw new RangeError('mergeDeltas: no delta to merge')
  if (deltas.length === 1) return deltas[0]
  // Freshly decoded, so the first state is ours to join the others into.
  const { state } = decodeState(deltas[0], type)
  for (let i = 1; i < deltas.length; i++) {
    const next = decodeState(deltas[i], type).state
    joinStoreInto(state.store, state.ctx, next.store, next.ctx)
    state.ctx.join(next.ctx)
  }
  return encodeState(type, state)
}
