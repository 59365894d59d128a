/**
 * Merging document deltas into one, to log or ship a run of local changes
 * as one delta. The inputs are deltas a replica of the type produced or
 * accepted (its `change` events): they are not validated again.
 */
import * as Y from 'yjs'
import { DecodeError } from '../errors.ts'
import { mergeYjsRun } from './yjs-merge.ts'

const mergeUpdates = Y.mergeUpdates

/**
 * Merges Yjs v1 updates into one: applying it equals applying them in any
 * order. A run of one client's consecutive transactions (local typing) is
 * merged by copying its structs ({@link mergeYjsRun}, byte for byte what
 * `Y.mergeUpdates` gives, about ten times faster); anything else goes
 * through `Y.mergeUpdates`. A single update is returned as it is.
 */
export function mergeYjsDeltas(deltas: readonly Uint8Array[]): Uint8Array {
  if (deltas.length === 0) throw new RangeError('mergeDeltas: no delta to merge')
  if (deltas.length === 1) return deltas[0]
  const run = mergeYjsRun(deltas)
  if (run !== undefined) return run
  try {
    return mergeUpdates(deltas as Uint8Array[])
  } catch (cause) {
    throw new DecodeError(`yjs: updates could not be merged: ${(cause as Error)?.message ?? cause}`, { cause })
  }
}

/**
 * Merges Automerge deltas (change and document chunks) into one: their
 * concatenation, which `applyDelta` takes chunk by chunk. A single delta is
 * returned as it is.
 */
export function mergeAutomergeDeltas(deltas: readonly Uint8Array[]): Uint8Array {
  if (deltas.length === 0) throw new RangeError('mergeDeltas: no delta to merge')
  if (deltas.length === 1) return deltas[0]
  let size = 0
  for (const delta of deltas) size += delta.length
  const out = new Uint8Array(size)
  let offset = 0
  for (const delta of deltas) {
    out.set(delta, offset)
    offset += delta.length
  }
  return out
}
