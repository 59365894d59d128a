/**
 * The decoded-size check of one document delta, by type, for a holder that
 * checks deltas before any replica applies them (the store's commit, whose
 * replicas replay their own trusted log without these bounds).
 */
import type { ReplicaType } from '../replica.ts'
import { splitAutomergeChunks } from './automerge-guard.ts'
import { checkAutomergeSize } from './automerge-size.ts'
import { resolveLimits, type DocumentLimits } from './options.ts'
import { checkYjsDeltaSize, validateYjsUpdate } from './yjs-guard.ts'

/**
 * Checks that a delta of `type` is well framed and decodes to no more than
 * the limits allow (`maxOperations`, `maxInsertedBytes`), without running
 * the library. Throws DecodeError or `CONCORD_LIMIT_EXCEEDED`; does nothing
 * for types that are not documents (their codecs bound every count by the
 * bytes).
 */
export function checkDocumentDelta(type: ReplicaType, delta: Uint8Array, limits?: Partial<DocumentLimits>): void {
  if (type !== 'yjs' && type !== 'automerge') return
  const resolved = resolveLimits(limits)
  if (type === 'yjs') checkYjsDeltaSize(validateYjsUpdate(delta, resolved), resolved)
  else checkAutomergeDeltaSize(splitAutomergeChunks(delta, resolved, 'automerge delta'), resolved)
}

/** {@link checkAutomergeSize} with a replica's limits (deflated columns inflate to at most `maxBytes`); skipped when unbounded. */
export function checkAutomergeDeltaSize(chunks: Parameters<typeof checkAutomergeSize>[0], limits: DocumentLimits): void {
  if (limits.maxOperations === Infinity && limits.maxInsertedBytes === Infinity) return
  checkAutomergeSize(chunks, { maxOperations: limits.maxOperations, maxInsertedBytes: limits.maxInsertedBytes, maxInflatedBytes: limits.maxBytes }, 'automerge delta')
}
