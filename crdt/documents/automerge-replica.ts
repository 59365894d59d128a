/**
 * An Automerge 3 document behind the {@link Replica} interface, with a typed
 * handle: `change(fn)` and `doc`.
 *
 * - `version()`: the heads and the change clock (per actor, the highest
 *   seq held; see automerge-clock.ts), encoded by
 *   {@link encodeAutomergeVersion} (format 2).
 * - `deltaSince(version)`: exactly the changes whose `(actor, seq)` the
 *   version lacks, also when none of its heads is known here (both sides
 *   changed while apart): for each actor, the version's seq names one of our
 *   changes, and `saveSince` those hashes gives every change that is not
 *   their ancestor, which is exactly what the version lacks (its changes are,
 *   per actor, seqs `1..n`, closed under deps). When the version holds none
 *   of our changes, the whole document (`save()`, one compressed chunk: the
 *   same changes, smaller). `null` when nothing is missing. A heads-only
 *   version (format 1, older peers) gets the changes since its known heads,
 *   or the whole document when none is known. Automerge's sync protocol
 *   (bloom filters over round trips) is the sync layer's choice, not the
 *   replica's.
 * - `applyDelta(bytes)`: framing checked by {@link splitAutomergeChunks};
 *   document chunks are loaded strictly into a scratch document first;
 *   change chunks go through `applyChanges`, which parses every change
 *   before applying any. Any Automerge error becomes DecodeError and the
 *   document is unchanged. Decoded size checked first (automerge-size.ts).
 *   Returns true when the heads changed; changes whose dependencies are
 *   missing wait outside Automerge (false until then; bounded, see
 *   waiting-room.ts); the delta that completes them applies them in the
 *   same call and its change event carries them too. After a wasm trap the
 *   document is rebuilt from its journal (automerge-runtime.ts).
 *   The JS view is rebuilt from the document after an application whose
 *   patches Automerge 3.5 may get wrong (several changes, not a linear
 *   extension; see automerge-apply.ts).
 * - `change(fn)`: one local change; emits `change` with its bytes.
 * - `snapshot()`: `save()` in the document snapshot envelope.
 * - `value()`: the document as plain data (counters as numbers, immutable
 *   strings as strings, dates as ISO strings, bytes as Uint8Array).
 * - `restore(past)`: one change rewriting what differs (text through
 *   `updateText`, a diff; lists by their differing middle).
 * Each replica gets a fresh random actor id unless `options.actor` says
 * otherwise (never reuse one across restarts: a restart that lost
 * unpersisted changes would reuse their sequence numbers).
 */
import * as A from '@automerge/automerge/slim'
import { Emitter, type Unsubscribe } from '../emitter.ts'
import { ConcordError, DecodeError, ErrorCodes, withArticle } from '../errors.ts'
import { Encoder, decodeGuarded } from '../codec.ts'
import { defineDocumentType, type DocumentTypeDef } from './document-type.ts'
import type { ChangeEvent, PreparedDelta, PrepareOptions, Replica, ReplicaEvents, ReplicaFactory, UndoRecord } from '../replica.ts'
import type { AgentId } from '../agent-id.ts'
import { mergeAutomergeDeltas } from './merge-deltas.ts'
import { applyChunks, sameHeads } from './automerge-apply.ts'
import { splitAutomergeChunks } from './automerge-guard.ts'
import { AutomergeJournal } from './automerge-journal.ts'
import { automergeError, automergeFailed, automergeGeneration, ensureAutomerge } from './automerge-runtime.ts'
import { WaitingRoom, type WaitingStats } from './waiting-room.ts'
import { checkAutomergeDeltaSize } from './delta-size.ts'
import { ChangeClock, hexOf, writeHashBytes } from './automerge-clock.ts'
import { parseStrictly } from './automerge-strict-load.ts'
import { AutomergeUndoRecord } from './automerge-undo-record.ts'
import { resolveLimits, stricterLimits, type AutomergeReplicaOptions, type DocumentLimits } from './options.ts'
import { decodeDocumentSnapshot, encodeDocumentSnapshot } from './snapshot-envelope.ts'
import { insertable, plainValue, restoreObject } from './automerge-value.ts'

export { plainValue }

/** Version format: heads and change clock. */
const VERSION_FORMAT = 2
/** Version format 1: heads only (still answered by `deltaSince`). */
const HEADS_ONLY_FORMAT = 1
const HASH_BYTES = 32
/** Longest actor id accepted in a version, in bytes (Automerge's are 16). */
const MAX_ACTOR_BYTES = 128
/** Actor of the shared initial change (see {@link AutomergeReplicaOptions.initial}). */
const INITIAL_ACTOR = '00'

/** A decoded Automerge replica version. */
export interface AutomergeVersion {
  /** The document's heads (hex change hashes, sorted as Automerge returns them). */
  readonly heads: A.Heads
  /** Per actor (hex), the highest seq held; `null` for a heads-only version (format 1). */
  readonly clock: ReadonlyMap<string, number> | null
}

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2)
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return bytes
}

/**
 * Encodes a version:
 * ```
 * u8      format version (2)
 * varuint head count, then each head as 32 bytes
 * varuint actor count, then per actor in ascending hex order:
 *         varuint actor length (1..128), actor bytes, varuint highest seq (>= 1)
 * ```
 * Equal documents give byte-equal versions.
 */
export function encodeAutomergeVersion(heads: A.Heads, clock: Iterable<readonly [string, number]>): Uint8Array {
  const actors = [...clock].filter(([, seq]) => seq > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const encoder = new Encoder(4 + heads.length * HASH_BYTES + actors.length * 24)
  encoder.writeUint8(VERSION_FORMAT)
  encoder.writeVarUint(heads.length)
  const hash = new Uint8Array(HASH_BYTES)
  for (const head of heads) {
    if (!writeHashBytes(head, hash, 0)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `automerge version: ${head} is not a change hash`)
    encoder.writeRaw(hash)
  }
  encoder.writeVarUint(actors.length)
  for (const [actor, seq] of actors) {
    encoder.writeBytes(hexToBytes(actor))
    encoder.writeVarUint(seq)
  }
  return encoder.finish()
}

/** Decodes a version (format 2, or a heads-only format 1). Throws {@link DecodeError}. */
export function decodeAutomergeVersion(bytes: Uint8Array): AutomergeVersion {
  return decodeGuarded('automerge version', bytes, (decoder) => {
    const format = decoder.readUint8()
    if (format !== VERSION_FORMAT && format !== HEADS_ONLY_FORMAT) {
      throw new DecodeError(`automerge version: unsupported format version ${format} (expected ${VERSION_FORMAT})`)
    }
    const count = decoder.readCount(HASH_BYTES)
    const heads: string[] = []
    for (let i = 0; i < count; i++) heads.push(hexOf(decoder.readRaw(HASH_BYTES)))
    if (format === HEADS_ONLY_FORMAT) return { heads, clock: null }
    const actors = decoder.readCount(3)
    const clock = new Map<string, number>()
    let previous = ''
    for (let i = 0; i < actors; i++) {
      const raw = decoder.readBytes()
      if (raw.length === 0 || raw.length > MAX_ACTOR_BYTES) throw new DecodeError(`automerge version: actor id of ${raw.length} bytes`)
      const actor = hexOf(raw)
      if (i > 0 && actor <= previous) throw new DecodeError('automerge version: actors not in ascending order')
      const seq = decoder.readVarUint()
      if (seq === 0) throw new DecodeError(`automerge version: seq 0 for actor ${actor}`)
      clock.set(actor, seq)
      previous = actor
    }
    return { heads, clock }
  })
}

/** The heads of a version made by {@link encodeAutomergeVersion}. Throws {@link DecodeError}. */
export function decodeAutomergeHeads(bytes: Uint8Array): A.Heads {
  return decodeAutomergeVersion(bytes).heads
}

/** An Automerge document behind the replica interface. */
export class AutomergeReplica<T = Record<string, unknown>> implements Replica {
  readonly type = 'automerge' as const
  readonly agentId: AgentId
  readonly events = new Emitter<ReplicaEvents>()

  /** Listens to `change` events (local mutations and remote deltas that changed the state); returns an unsubscribe. */
  on(event: 'change', listener: (event: ChangeEvent) => void): Unsubscribe {
    return this.events.on(event, listener)
  }
  /** The limits enforced on deltas and snapshots. */
  readonly limits: DocumentLimits
  // The members marked @internal below are the apply path's (automerge-apply.ts, AutomergeApplyTarget).
  /** @internal the document (replaced by every change). */
  current: A.Doc<T>
  /** @internal this replica's actor (hex); a rollback takes a fresh one. */
  actor: string
  /** @internal the change clock, built on first use and then kept up to date (see automerge-clock.ts). */
  clock: ChangeClock | undefined
  /** @internal the wasm generation `current` lives in (automerge-runtime.ts). */
  generation = automergeGeneration()
  /** @internal what the document is rebuilt from after the wasm module failed. */
  readonly journal: AutomergeJournal
  /** @internal deltas waiting for a missing dependency, keyed by missing change hash (their own hashes kept). */
  readonly waiting: WaitingRoom<string, string[]>
  /** Open undo records: the heads each started at. */
  private readonly undoRecords = new Set<AutomergeUndoRecord>()
  /** See {@link Replica.guard}. */
  guard: (() => void) | undefined

  constructor(options: AutomergeReplicaOptions<T>) {
    this.agentId = options.agentId
    this.limits = resolveLimits(options.limits)
    this.waiting = new WaitingRoom(this.limits, options.waitingBudget)
    ensureAutomerge()
    try {
      if (options.snapshot !== undefined) {
        const { payload } = decodeDocumentSnapshot(options.snapshot, 'automerge')
        splitAutomergeChunks(payload, this.limits, 'automerge snapshot')
        try {
          this.current = options.actor === undefined ? A.load<T>(payload) : A.load<T>(payload, { actor: options.actor })
        } catch (cause) {
          throw automergeError('automerge snapshot', cause)
        }
        this.journal = new AutomergeJournal(payload.slice())
      } else if (options.initial !== undefined) {
        const initial = options.initial
        const seeded = A.change(A.init<T>({ actor: INITIAL_ACTOR }), { time: 0 }, (doc) => {
          Object.assign(doc as object, insertable(initial))
        })
        this.current = options.actor === undefined ? A.clone(seeded) : A.clone(seeded, { actor: options.actor })
        this.journal = new AutomergeJournal(A.save(seeded))
      } else {
        this.current = options.actor === undefined ? A.init<T>() : A.init<T>({ actor: options.actor })
        this.journal = new AutomergeJournal()
      }
    } catch (cause) {
      throw automergeError('automerge replica', cause, false)
    }
    this.actor = A.getActorId(this.current)
  }

  /**
   * @internal rebuilds the document from its journal when the wasm module
   * was reloaded since it was built (another document's delta trapped it).
   */
  live(): void {
    if (this.generation === automergeGeneration()) return
    try {
      this.current = this.journal.rebuild<T>(this.actor)
    } catch (cause) {
      throw automergeError('automerge rebuild', cause, false)
    }
    this.clock = undefined
    this.generation = automergeGeneration()
  }

  /** The change clock (built from the document's change metadata on first use). */
  private changeClock(): ChangeClock {
    return (this.clock ??= ChangeClock.of(this.current))
  }

  /** The current document (an immutable Automerge view; replaced by every change). */
  get doc(): A.Doc<T> {
    this.live()
    return this.current
  }

  /**
   * Makes one local change; emits `change` (its `delta` is the change's
   * bytes) and returns true, or false when `fn` changed nothing. A change larger than `limits.maxBytes` (what
   * `applyDelta` and a store reloading it accept) is refused with
   * `CONCORD_LIMIT_EXCEEDED` and the document is left as it was. A failure
   * of Automerge itself (a wasm trap) is `CONCORD_LIBRARY_FAILED` and
   * changes nothing.
   */
  change(fn: A.ChangeFn<T>, message?: string): boolean {
    return this.commitChange(fn, message) !== null
  }

  /** {@link change}, returning the change's bytes (null when `fn` changed nothing). */
  private commitChange(fn: A.ChangeFn<T>, message?: string): Uint8Array | null {
    this.guard?.()
    this.live()
    const before = A.getHeads(this.current)
    let next: A.Doc<T>
    try {
      next = message === undefined ? A.change(this.current, fn) : A.change(this.current, { message }, fn)
    } catch (cause) {
      // An exception of `fn` itself leaves the module usable and is the caller's: rethrown as it is.
      if (!automergeFailed(cause)) throw cause
      throw automergeError('automerge change', cause, false)
    }
    const after = A.getHeads(next)
    if (sameHeads(before, after)) return null
    const delta = A.getLastLocalChange(next)!
    if (delta.length > this.limits.maxBytes) {
      // The handle already holds the change: go back to a fork at the heads before it.
      this.current = A.clone(A.view(next, before), { actor: this.actor })
      A.free(next)
      this.clock = undefined
      throw new ConcordError(
        ErrorCodes.LIMIT_EXCEEDED,
        `automerge change of ${delta.length} bytes is over the limit of ${this.limits.maxBytes} bytes; the document is unchanged`,
      )
    }
    this.current = next
    // A local change depends on every head: it is the only head now.
    const clock = this.clock
    if (clock !== undefined && (after.length !== 1 || !clock.add(this.actor, clock.seq(this.actor) + 1, after[0]))) this.clock = undefined
    this.journal.add(delta, next)
    this.events.emit('change', { delta, local: true })
    return delta
  }

  /**
   * Records the changes made from now on (see {@link Replica.recordUndo}):
   * the heads now; `undo` goes back to a fork of the document at them.
   */
  recordUndo(): UndoRecord {
    this.live()
    const record = new AutomergeUndoRecord(this, A.getHeads(this.current))
    this.undoRecords.add(record)
    return record
  }

  /** @internal goes back to `heads` and ends `record`. */
  undoTo(record: AutomergeUndoRecord, heads: A.Heads): void {
    this.live()
    if (!this.undoRecords.delete(record) || sameHeads(heads, A.getHeads(this.current))) return
    const previous = this.current
    // A fresh actor: the changes taken back keep their (actor, seq) for good.
    this.current = A.clone(A.view(previous, heads))
    this.actor = A.getActorId(this.current)
    A.free(previous)
    this.clock = undefined
    const saved = A.save(this.current)
    this.journal.reset(saved)
    this.events.emit('change', { delta: saved, local: false, rollback: true })
  }

  /** @internal ends `record` without undoing. */
  releaseUndo(record: AutomergeUndoRecord): void {
    this.undoRecords.delete(record)
  }

  /**
   * Replaces the document with `snapshot`'s (see {@link Replica.reset}),
   * under a fresh actor id so that no (actor, seq) of a change taken back
   * is ever reused.
   */
  reset(snapshot: Uint8Array): void {
    const { payload } = decodeDocumentSnapshot(snapshot, 'automerge')
    splitAutomergeChunks(payload, this.limits, 'automerge snapshot')
    let next: A.Doc<T>
    try {
      next = A.load<T>(payload)
    } catch (cause) {
      throw automergeError('automerge snapshot', cause)
    }
    const previous = this.current
    this.current = next
    this.actor = A.getActorId(next)
    // A document of an older wasm generation is not freed: its module is gone.
    if (this.generation === automergeGeneration()) A.free(previous)
    this.generation = automergeGeneration()
    this.clock = undefined
    this.undoRecords.clear()
    this.journal.reset(payload.slice())
    this.events.emit('change', { delta: payload, local: false, rollback: true })
  }

  version(): Uint8Array {
    this.live()
    return encodeAutomergeVersion(A.getHeads(this.current), this.changeClock().entries())
  }

  deltaSince(version: Uint8Array): Uint8Array | null {
    const { heads, clock: theirs } = decodeAutomergeVersion(version)
    this.live()
    try {
      return this.deltaSinceVersion(heads, theirs)
    } catch (cause) {
      throw automergeError('automerge deltaSince', cause, false)
    }
  }

  private deltaSinceVersion(heads: A.Heads, theirs: ReadonlyMap<string, number> | null): Uint8Array | null {
    if (A.getHeads(this.current).length === 0) return null
    if (theirs === null) return this.deltaSinceHeads(heads)
    // For every actor, the last of our changes the version also holds: the
    // version holds exactly their ancestors among our changes.
    const ours = this.changeClock()
    const shared: string[] = []
    let lacking = false
    for (const [actor, seq] of ours.entries()) {
      const known = theirs.get(actor) ?? 0
      if (known < seq) lacking = true
      if (known > 0) shared.push(ours.hashAt(actor, Math.min(known, seq)))
    }
    if (!lacking) return null
    if (shared.length === 0) return A.save(this.current)
    const delta = A.saveSince(this.current, shared)
    return delta.length === 0 ? null : delta
  }

  /** `deltaSince` for a heads-only version (format 1). */
  private deltaSinceHeads(heads: A.Heads): Uint8Array | null {
    const known = heads.filter((head) => A.hasHeads(this.current, [head]))
    if (known.length === 0 && heads.length > 0) return A.save(this.current)
    const delta = A.saveSince(this.current, known)
    return delta.length === 0 ? null : delta
  }

  applyDelta(delta: Uint8Array, origin?: unknown): boolean {
    const chunks = splitAutomergeChunks(delta, this.limits, 'automerge delta')
    checkAutomergeDeltaSize(chunks, this.limits)
    return applyChunks(this, delta, chunks, origin) !== null
  }

  /**
   * Checks a remote delta (see {@link Replica.prepareDelta}): its chunks'
   * framing and checksums and what they decode to, against the stricter of
   * this replica's limits and `options.limits`; `strict` has Automerge parse
   * them too (in scratch documents), which a delta that has to wait for a
   * dependency would otherwise skip until it is let in.
   */
  prepareDelta(delta: Uint8Array, options: PrepareOptions = {}): PreparedDelta {
    const limits = stricterLimits(this.limits, options.limits)
    const chunks = splitAutomergeChunks(delta, limits, 'automerge delta')
    checkAutomergeDeltaSize(chunks, limits)
    const parsed = options.strict === true ? parseStrictly<T>(chunks, this.current, this.actor, this.generation) : undefined
    let applied = false
    const replica = this
    // A method, not an arrow (see CausalReplica.prepareDelta).
    return {
      apply(origin) {
        if (applied) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a prepared delta is applied once')
        applied = true
        return applyChunks(replica, delta, chunks, origin, parsed)
      },
    }
  }

  /** Deltas waiting for a missing dependency: held now, dropped over budget, released since creation. */
  waitingStats(): WaitingStats {
    return this.waiting.stats()
  }

  snapshot(): Uint8Array {
    this.live()
    let payload: Uint8Array
    try {
      payload = A.save(this.current)
    } catch (cause) {
      throw automergeError('automerge snapshot', cause, false)
    }
    return encodeDocumentSnapshot({ kind: 'automerge', gc: false, payload })
  }

  value(): unknown {
    this.live()
    return plainValue(this.current)
  }

  restore(past: Replica): Uint8Array | null {
    if (!(past instanceof AutomergeReplica)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `automerge restore: the past version is ${withArticle(past.type)} replica`)
    }
    const wanted = past.doc as unknown as Record<string, unknown>
    return this.commitChange((doc) => restoreObject(doc, [], doc as unknown as Record<string, unknown>, wanted), 'restore')
  }
}

/** Creates Automerge replicas (type `automerge`); accepts {@link AutomergeReplicaOptions}. */
export const automergeReplicaFactory: ReplicaFactory<AutomergeReplica> = {
  type: 'automerge',
  create: (options) => new AutomergeReplica(options),
  mergeDeltas: mergeAutomergeDeltas,
}

/** Automerge: the catalog's entry. */
export const automergeType: DocumentTypeDef<'automerge'> = defineDocumentType({ tag: 'automerge', opener: 'automerge', factory: automergeReplicaFactory })

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** An Automerge document handle (`.doc`, `.change(fn)`). */
    automerge<T = Record<string, unknown>>(name: string, options?: O): Promise<AutomergeReplica<T>>
  }
}
