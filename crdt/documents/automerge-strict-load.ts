/**
 * A whole Automerge document that a strict prepare loaded for an empty
 * replica (`AutomergeReplica.prepareDelta` with `strict`): the check is the
 * load, so the apply that follows takes the loaded document instead of
 * loading the bytes again. Taken once, or freed (at the latest in a
 * microtask after the prepare, so an unapplied prepare holds no wasm memory).
 */
import * as A from '@automerge/automerge/slim'
import { automergeError, automergeGeneration, ensureAutomerge } from './automerge-runtime.ts'

/**
 * A whole document a strict prepare loaded for an empty replica (see
 * `AutomergeReplica.parseStrictly`): taken once by the apply, or freed.
 */
export class StrictlyParsed<T> {
  private readonly generation = automergeGeneration()

  constructor(private doc: A.Doc<T> | undefined) {}

  /** The document, when it is still usable for a replica of `actor` (undefined: not wanted); else undefined. Either way, no longer held. */
  take(actor: string | undefined): A.Doc<T> | undefined {
    const doc = this.doc
    if (doc === undefined || actor === undefined || this.generation !== automergeGeneration() || A.getActorId(doc) !== actor) {
      this.free()
      return undefined
    }
    this.doc = undefined
    return doc
  }

  /** Frees the document unless it was taken (one of an older wasm generation is not freed: its module is gone). */
  free(): void {
    const doc = this.doc
    this.doc = undefined
    if (doc !== undefined && this.generation === automergeGeneration()) A.free(doc)
  }
}

/**
 * `bytes` (one document chunk) loaded as a document of `actor`, held for the
 * apply of the same turn; `CONCORD_DECODE_ERROR` when Automerge refuses it.
 */
export function loadStrictly<T>(bytes: Uint8Array, actor: string): StrictlyParsed<T> {
  let doc: A.Doc<T>
  ensureAutomerge()
  try {
    doc = A.load<T>(bytes, { actor })
  } catch (cause) {
    throw automergeError('automerge delta rejected', cause)
  }
  const parsed = new StrictlyParsed(doc)
  queueMicrotask(() => parsed.free())
  return parsed
}
