/**
 * The decoded-size check of one document delta, by type, for a holder that
 * checks deltas before any replica applies them (the store's commit, whose
 * replicas replay their own trusted log without these bounds).
 */
import * as A from '@automerge/automerge/slim'
import type { ReplicaType } from '../replica.ts'
import { splitAutomergeChunks, type AutomergeChunk } from './automerge-guard.ts'
import { automergeError, ensureAutomerge } from './automerge-runtime.ts'
import { checkAutomergeSize } from './automerge-size.ts'
import { resolveLimits, type DocumentLimits } from './options.ts'
import { checkYjsDeltaSize, validateYjsUpdate } from './yjs-guard.ts'

/**
 * Checks that a delta of `type` is well framed and decodes to no more than
 * the limits allow (`maxOperations`, `maxInsertedBytes`), without running
 * the library. Throws DecodeError or `CONCORD_LIMIT_EXCEEDED`; does nothing
 * for types that are not documents (their codecs bound every count by the
 * bytes). With `parse`, an Automerge delta is also parsed by Automerge
 * (in scratch documents), as a validation before an all-or-none apply.
 */
export function checkDocumentDelta(type: ReplicaType, delta: Uint8Array, limits?: Partial<DocumentLimits>, parse = false): void {
  if (type !== 'yjs' && type !== 'automerge') return
  const resolved = resolveLimits(limits)
  if (type === 'yjs') {
    // The guard's walk is a full validation: Yjs cannot throw on what it accepts.
    checkYjsDeltaSize(validateYjsUpdate(delta, resolved), resolved)
    return
  }
  const chunks = splitAutomergeChunks(delta, resolved, 'automerge delta')
  checkAutomergeDeltaSize(chunks, resolved)
  if (parse) parseAutomergeChunks(chunks)
}

/**
 * Has Automerge parse every chunk strictly, in scratch documents (changes
 * whose dependencies are missing there only queue): what a replica that
 * holds a delta while it waits does not do. Throws DecodeError (after a
 * trap, with the module recovered).
 */
export function parseAutomergeChunks(chunks: readonly AutomergeChunk[]): void {
  const changes = chunks.filter((chunk) => chunk.type === 1).map((chunk) => chunk.bytes)
  ensureAutomerge()
  try {
    for (const chunk of chunks) if (chunk.type === 0) A.free(A.load(chunk.bytes))
    if (changes.length > 0) {
      const scratch = A.init()
      const [applied] = A.applyChanges(scratch, changes)
      A.free(applied)
    }
  } catch (cause) {
    throw automergeError('automerge delta rejected', cause)
  }
}

/** {@link checkAutomergeSize} with a replica's limits (deflated columns inflate to at most `maxBytes`); skipped when unbounded. */
export function checkAutomergeDeltaSize(chunks: Parameters<typeof checkAutomergeSize>[0], limits: DocumentLimits): void {
  if (limits.maxOperations === Infinity && limits.maxInsertedBytes === Infinity) return
  checkAutomergeSize(
    chunks,
    { maxOperations: limits.maxOperations, maxInsertedBytes: limits.maxInsertedBytes, maxInflatedBytes: limits.maxBytes },
    'automerge delta',
  )
}
