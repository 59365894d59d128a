/**
 * A checked Automerge delta applied to an {@link AutomergeReplica}'s
 * document (`applyDelta`, a prepared delta's `apply`): change chunks whose
 * dependencies are missing wait outside Automerge (waiting-room.ts); the
 * delta and the waiting ones it completes go in one Automerge call, document
 * chunks parsed strictly into scratch documents first (or taken from a
 * strict prepare, automerge-strict-load.ts); the JS view is rebuilt after an
 * application whose patches Automerge 3.5 may get wrong; the change clock,
 * the journal and the `change` event follow.
 *
 * Plain functions taking the replica (not methods of a helper object, nor
 * closures): this runs for every remote delta.
 */
import * as A from '@automerge/automerge/slim'
import type { Emitter } from '../emitter.ts'
import { ErrorCodes, isConcordError } from '../errors.ts'
import type { ReplicaEvents } from '../replica.ts'
import type { AutomergeReplica } from './automerge-replica.ts'
import type { ChangeClock } from './automerge-clock.ts'
import { splitAutomergeChunks, type AutomergeChunk } from './automerge-guard.ts'
import type { AutomergeJournal } from './automerge-journal.ts'
import { extendsLinearly } from './automerge-linear.ts'
import { automergeError, automergeGeneration } from './automerge-runtime.ts'
import type { StrictlyParsed } from './automerge-strict-load.ts'
import { changeHashes, missingDependencies } from './automerge-waiting.ts'
import { mergeAutomergeDeltas } from './merge-deltas.ts'
import type { DocumentLimits } from './options.ts'
import type { WaitingRoom } from './waiting-room.ts'

/** What applying a delta needs of the replica (its `@internal` members; see {@link AutomergeReplica}). */
export interface AutomergeApplyTarget<T> {
  /** The document; replaced by the application. */
  current: A.Doc<T>
  /** The change clock, or undefined until it is built again. */
  clock: ChangeClock | undefined
  /** The replica's actor (hex). */
  readonly actor: string
  /** The wasm generation `current` lives in. */
  readonly generation: number
  readonly limits: DocumentLimits
  readonly journal: AutomergeJournal
  /** Deltas waiting for a missing dependency, keyed by missing change hash (their own hashes kept). */
  readonly waiting: WaitingRoom<string, string[]>
  readonly events: Emitter<ReplicaEvents>
  /** Rebuilds the document when the wasm module was reloaded since it was built. */
  live(): void
}

/** Whether two heads are the same (Automerge returns them sorted). */
export function sameHeads(a: A.Heads, b: A.Heads): boolean {
  return a.length === b.length && a.every((head, i) => head === b[i])
}

/** Applies a checked delta (held while a dependency is missing); what changed the document, or null. */
export function applyChunks<T>(
  replica: AutomergeApplyTarget<T>,
  delta: Uint8Array,
  chunks: AutomergeChunk[],
  origin: unknown,
  parsed?: StrictlyParsed<T>,
): Uint8Array | null {
  replica.live()
  const documents = chunks.filter((chunk) => chunk.type === 0)
  const changeChunks = chunks.filter((chunk) => chunk.type !== 0)
  const before = A.getHeads(replica.current)
  const own = changeHashes(changeChunks)
  if (documents.length === 0) {
    // Changes whose dependencies are missing wait outside Automerge (bounded; dropped and counted when full).
    const missing = missingDependencies(replica.current, before, changeChunks, own)
    if (missing !== undefined) {
      replica.waiting.hold(
        delta,
        origin,
        missing.map((hash) => [hash, 1] as const),
        own,
      )
      return null
    }
  }
  const released = release(replica.waiting, own, documents.length > 0)
  try {
    return integrate(replica, delta, origin, documents, changeChunks, before, released, parsed)
  } catch (error) {
    if (released.length === 0 || !isConcordError(error, ErrorCodes.DECODE_ERROR) || replica.generation !== automergeGeneration()) throw error
    // A released delta broke the batch: apply this one alone (the released ones are dropped; anti-entropy brings them again).
    return integrate(replica, delta, origin, documents, changeChunks, before, [])
  }
}

/** Takes the waiting deltas that applying changes `own` (and, after a document chunk, anything now known) makes ready. */
function release(waiting: WaitingRoom<string, string[]>, own: readonly string[], hadDocument: boolean): Uint8Array[] {
  if (waiting.size === 0) return []
  for (const hash of own) waiting.advance(hash, 1)
  if (hadDocument) for (const hash of [...waiting.keys()]) waiting.advance(hash, 1)
  const released: Uint8Array[] = []
  for (let next = waiting.next(); next !== undefined; next = waiting.next()) {
    released.push(next.bytes)
    for (const hash of next.context) waiting.advance(hash, 1)
  }
  return released
}

/** Applies a checked delta (and waiting ones it released) in one Automerge call; emits `change` and returns what changed the document, or null. */
function integrate<T>(
  replica: AutomergeApplyTarget<T>,
  delta: Uint8Array,
  origin: unknown,
  documents: AutomergeChunk[],
  changeChunks: AutomergeChunk[],
  before: A.Heads,
  released: Uint8Array[],
  parsed?: StrictlyParsed<T>,
): Uint8Array | null {
  if (released.length > 0) changeChunks = [...changeChunks, ...released.flatMap((bytes) => splitAutomergeChunks(bytes, replica.limits, 'automerge delta'))]
  const changes = changeChunks.map((chunk) => chunk.bytes)
  // Changes that arrived before their dependencies inside a document's delta wait inside Automerge.
  const hadPending = A.getMissingDeps(replica.current, []).length > 0
  // The whole document into an empty replica: its strict parse is the result.
  const wholeIntoEmpty = before.length === 0 && !hadPending && changes.length === 0 && documents.length === 1
  let next = replica.current
  // Loaded by a strict prepare, for this replica while empty: taken when it still is (else freed).
  const loaded = parsed?.take(wholeIntoEmpty ? replica.actor : undefined)
  try {
    if (loaded !== undefined) {
      next = loaded
    } else if (wholeIntoEmpty) {
      next = A.load<T>(documents[0].bytes, { actor: replica.actor })
    } else {
      for (const chunk of documents) A.free(A.load(chunk.bytes)) // strict parse, into a scratch document
      if (changes.length > 0) [next] = A.applyChanges(next, changes)
      for (const chunk of documents) next = A.loadIncremental(next, chunk.bytes)
    }
  } catch (cause) {
    // A trap reloads the module: this document is rebuilt from its journal on its next use.
    throw automergeError('automerge delta rejected', cause)
  }
  if (sameHeads(before, A.getHeads(next))) {
    replica.current = next
    return null
  }
  // Automerge 3.5.0 patches its JS view wrongly for some applications that
  // bring several changes with concurrency among them or with the document
  // (a deleted map winner and a lower concurrent value in one call; a list
  // insert next to an element deleted in the same call: found by the peer
  // chaos run, seed 1513; test/crdt/documents/automerge-view.test.ts). The
  // document itself is right, so the view is rebuilt from it (about 1 ms
  // for a 30 kB text, versus ~19 ms to apply one change to it) unless the
  // patches are those of a single change or of a linear extension.
  const trustView = wholeIntoEmpty || (documents.length === 0 && !hadPending && (changes.length <= 1 || extendsLinearly(changeChunks, before)))
  if (!trustView) next = rematerialized(next)
  replica.current = next
  // The changes added (those of the delta, and waiting ones it completed).
  if (replica.clock !== undefined && !replica.clock.addChanges(A.getChangesMetaSince(next, before))) replica.clock = undefined
  // When this delta completed waiting changes, the change event carries them
  // too: a store logs what the event carries, and a replay of the log must
  // give this state (the waiting changes were never logged on their own).
  const event = hadPending ? A.saveSince(next, before) : released.length > 0 ? mergeAutomergeDeltas([delta, ...released]) : delta
  if (wholeIntoEmpty) replica.journal.reset(documents[0].bytes.slice())
  else replica.journal.add(event, next)
  replica.events.emit('change', { delta: event, local: false, origin })
  return event
}

/**
 * `doc` with its JS view materialized afresh from the document itself (the
 * same Automerge handle, so heads, actor and waiting changes are kept),
 * instead of patched. `getBackend` and `materialize` are how `load` and
 * `init` build a view in Automerge 3.5.
 */
function rematerialized<T>(doc: A.Doc<T>): A.Doc<T> {
  const handle = A.getBackend(doc)
  return handle.materialize('/', undefined, { handle, heads: undefined, freeze: false, patchCallback: undefined }) as A.Doc<T>
}
