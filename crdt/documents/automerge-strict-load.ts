/**
 * The parse of a strict prepare (`AutomergeReplica.prepareDelta` with
 * `strict`, {@link parseStrictly}): Automerge parses the delta's chunks in
 * scratch documents, except a whole document for an empty replica, which is
 * loaded as that replica's document: the check is the load, so the apply
 * that follows takes the loaded document instead of loading the bytes
 * again. Taken once, or freed (at the latest in a microtask after the
 * prepare, so an unapplied prepare holds no wasm memory).
 */
import * as A from '@automerge/automerge/slim'
import type { AutomergeChunk } from './automerge-guard.ts'
import { automergeError, automergeGeneration, ensureAutomerge } from './automerge-runtime.ts'
import { parseAutomergeChunks } from './delta-size.ts'

/**
 * A whole document a strict prepare loaded for an empty replica (see
 * {@link parseStrictly}): taken once by the apply, or freed.
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

/**
 * Has Automerge parse `chunks` (a strict prepare) for a replica whose
 * document is `doc`, of `actor`, built in wasm generation `generation`. A
 * whole document for this replica while it is empty is loaded as this
 * replica's document, kept for the apply that follows in the same turn (it
 * is loaded once, not again); unclaimed by then, it is freed.
 */
export function parseStrictly<T>(chunks: readonly AutomergeChunk[], doc: A.Doc<T>, actor: string, generation: number): StrictlyParsed<T> | undefined {
  const whole = chunks.length === 1 && chunks[0].type === 0 && generation === automergeGeneration() && A.getHeads(doc).length === 0
  if (!whole) {
    parseAutomergeChunks(chunks)
    return undefined
  }
  return loadStrictly<T>(chunks[0].bytes, actor)
}
