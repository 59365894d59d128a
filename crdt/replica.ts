/**
 * The replica interface: what persistence and sync see of every replicated
 * type, native CRDT or document (Yjs, Automerge). Everything crosses it as
 * bytes, so the layers above never know which type they carry.
 *
 * Contract, for every implementation:
 * - `version()` encodes what the replica has seen.
 * - `deltaSince(v)` returns exactly what a replica at version `v` lacks
 *   (including removals of elements it holds), or `null` if it lacks nothing.
 *   Joining it into a replica at `v` gives the same state as a full join.
 * - `applyDelta(bytes)` validates the whole input before touching state: on
 *   bad input it throws a `DecodeError` (code `CONCORD_DECODE_ERROR`) and the
 *   state is unchanged. It returns `true` when the state changed, `false`
 *   when the delta added nothing (already seen): such a delta must not be
 *   logged or forwarded again. `prepareDelta(bytes)` is its first half (the
 *   check, one decode) and `apply()` of what it returns the second.
 * - Local mutators apply their delta, emit `change` with `local: true` (the
 *   delta is the event's, not returned) and return whether they changed
 *   anything; `applyDelta` emits `change` with `local: false` when the
 *   state changed.
 * - `snapshot()` is the whole state; `createReplica(type, { snapshot })`
 *   restores an equal replica.
 */
import type { AgentId } from './agent-id.ts'
import type { ReplicaType } from './catalog.ts'
import type { DocumentLimits } from './documents/options.ts'
import type { WaitingBudget } from './documents/waiting-room.ts'
import type { Emitter, Unsubscribe } from './emitter.ts'
import type { HybridClock } from './hlc.ts'

/** Every replicated type, by its stable tag: the catalog's (crdt/catalog.ts). */
export type { ReplicaType }

/** Payload of a replica's `change` event. */
export interface ChangeEvent {
  /** Delta bytes: applying them to any replica of the same type brings this change. */
  readonly delta: Uint8Array
  /** True for a local mutation, false for a remote delta applied here. */
  readonly local: boolean
  /** Whatever the caller passed to `applyDelta` (for example the peer it came from). */
  readonly origin?: unknown
  /**
   * True when the replica's holder took changes back ({@link UndoRecord.undo},
   * {@link Replica.reset}): the value went back to an earlier one. Such an
   * event is no change to log or send; `delta` is the whole new state
   * (`reset`) or the compensating Yjs update (a Yjs undo).
   */
  readonly rollback?: boolean
}

/** Events every replica emits. */
export interface ReplicaEvents extends Record<string, unknown> {
  change: ChangeEvent
}

/** What persistence and sync need of every replicated type. */
export interface Replica {
  /** The type tag, fixed at creation. */
  readonly type: ReplicaType
  /** The agent id of the holder of this copy (crdt/agent-id.ts). */
  readonly agentId: AgentId
  /** `change` events: local mutations and remote deltas that changed the state. */
  readonly events: Emitter<ReplicaEvents>
  /** Shorthand for `events.on('change', listener)`; returns an unsubscribe. */
  on(event: 'change', listener: (event: ChangeEvent) => void): Unsubscribe

  /** Encoded version: what this replica has seen. */
  version(): Uint8Array
  /** What a replica at `version` lacks, or `null` if nothing. Throws DecodeError on a bad version. */
  deltaSince(version: Uint8Array): Uint8Array | null
  /**
   * Optional. `true` when `deltaSince(version())` is `null` in every state
   * (the version is the whole state's context, removals included: the
   * native types), so that a state digest (crdt/state-digest.ts) need not
   * compute it. A type that leaves it unset is asked.
   */
  readonly ownVersionComplete?: boolean
  /** Joins a remote delta atomically; true if the state changed. Throws DecodeError on bad input. */
  applyDelta(delta: Uint8Array, origin?: unknown): boolean
  /**
   * Optional (every built-in type has it). The first half of `applyDelta`:
   * decodes and checks `delta` without touching the state (DecodeError,
   * `CONCORD_LIMIT_EXCEEDED` over `options.limits`), and returns it ready
   * to join, so that a holder checks every delta of a unit before it
   * applies any and has each decoded once. `applyDelta(d, o)` is
   * `prepareDelta(d).apply(o) !== null`. A holder of a replica without it
   * applies its deltas unchecked.
   */
  prepareDelta?(delta: Uint8Array, options?: PrepareOptions): PreparedDelta
  /** The whole state, encoded (version byte first). */
  snapshot(): Uint8Array
  /**
   * Optional (a document that holds updates waiting for a dependency: Yjs).
   * What the last remote delta applied (`applyDelta`, a prepared `apply`)
   * did with waiting updates: `held`, the copy it keeps of that delta when
   * the delta waits; `released`, the waiting updates it let in with it, in
   * the order applied (each the copy that was `held`). What that apply
   * returned is the merge of its delta and `released`; applying the delta
   * then each of these, in order, gives the same state, so a holder may log
   * them one by one, each as it came (an author's signature covers those
   * bytes, not a merge).
   */
  lastApply?(): { readonly held?: Uint8Array | undefined; readonly released: readonly Uint8Array[] }
  /** Optional: the bounds its `applyDelta` and snapshot loading enforce (documents); `maxBytes` per delta or snapshot. */
  readonly limits?: { readonly maxBytes: number }
  /** The value as plain JSON-able data. */
  value(): unknown
  /**
   * Makes a new local change that brings the value back to `past.value()`
   * (used by revert: the change replicates like any other). Emits `change`
   * and returns its delta, or `null` if the values are already equal. Throws
   * a ConcordError (`CONCORD_INVALID_ARGUMENT`) for a type that cannot go
   * back (a grow-only type asked to shrink).
   */
  restore(past: Replica): Uint8Array | null
  /**
   * Optional. Starts collecting the local changes made from now on into one
   * delta (see {@link LocalRun}), for a holder that logs them together and
   * needs no delta per change. While a run is open and its holder is the
   * only `change` listener, a local change's `delta` may be computed only
   * when read, and is exact only if read before the next change of the
   * replica (the holder reads none: it takes the run's delta). With other
   * listeners, every `delta` stays exact.
   */
  openLocalRun?(): LocalRun
  /**
   * Optional hook, set by the replica's holder (a store): called before
   * every local mutation. When it throws, the mutation does not happen and
   * the error reaches the mutator's caller (a closed store, a change over a
   * limit). A Yjs document edited directly cannot refuse an edit: there the
   * edit is taken back at once (a compensating transaction) and the error
   * is the hook's to report.
   */
  guard?: (() => void) | undefined
  /**
   * Optional. Starts recording the changes made from now on so that they
   * can be taken back exactly ({@link UndoRecord}); a transaction block that
   * throws uses it. Costs nothing per change for native types and Automerge
   * beyond the change itself; a Yjs document keeps deleted content alive
   * until the record is released.
   */
  recordUndo?(): UndoRecord
  /**
   * Optional. Replaces the whole state, in place, with that of `snapshot`
   * (from `snapshot()` of a replica of the same type): the holder's rollback
   * of changes it could not persist. Not a change: nothing to log or send.
   * Emits `change` with `rollback: true`. The replica never hands out again
   * an id it used before the reset (native dots, Automerge actor seqs).
   * Throws DecodeError on a malformed snapshot (the state is then unchanged).
   */
  reset?(snapshot: Uint8Array): void
}

/** Options of {@link Replica.prepareDelta}. */
export interface PrepareOptions {
  /**
   * Bounds on untrusted input, checked with the replica's own (the stricter
   * of each): for the documents, what one delta may decode to
   * (`maxOperations`, `maxInsertedBytes`) and its framing; other types
   * ignore them (their codecs bound every count by the bytes).
   */
  readonly limits?: Partial<DocumentLimits> | undefined
  /**
   * Check now what `apply` could still refuse, for a holder that applies
   * several deltas all or none: after a strict prepare, `apply` throws only
   * when the library itself fails (`CONCORD_LIBRARY_FAILED`) or the replica
   * is used wrongly meanwhile. Only Automerge pays for it (a parse of its
   * changes, in scratch documents); the other types check everything anyway.
   */
  readonly strict?: boolean | undefined
}

/** A remote delta checked by {@link Replica.prepareDelta}, ready to join. */
export interface PreparedDelta {
  /**
   * Joins it as `applyDelta` does (a `change` event when the state changed)
   * and returns what changed the state: the delta, or its merge with the
   * updates that waited for it and now joined with it; `null` when it
   * added nothing (already seen, or it waits for a missing dependency). A
   * holder logs exactly these bytes. At most once.
   */
  apply(origin?: unknown): Uint8Array | null
}

/** Changes recorded by {@link Replica.recordUndo}. */
export interface UndoRecord {
  /**
   * Takes back every change made since the record started, leaving the
   * value exactly as it was then (native types and Automerge: the state
   * too; a Yjs document: its local transactions, by a compensating one, so
   * its struct store keeps the undone structs as deleted ones). Emits `change` with
   * `rollback: true` when the value changed. Ends the record. Returns true
   * when the state is exactly as it was (false: a compensating change,
   * which the holder must persist with the undone changes).
   */
  undo(): boolean
  /** Ends the record, keeping the changes. */
  release(): void
}

/** A run of local changes collected into one delta (see {@link Replica.openLocalRun}). */
export interface LocalRun {
  /** An estimate of the run's delta size in bytes so far (to bound it). */
  readonly bytes: number
  /**
   * Ends the run: the join of the local changes made while it was open
   * (remote deltas applied meanwhile are not in it), or `null` if none was.
   * Later calls return the same.
   */
  close(): Uint8Array | null
}

/** Options to create or load a replica. */
export interface ReplicaOptions {
  /** The agent id of the holding replica. */
  readonly agentId: AgentId
  /** Clock for types ordered by time (LWW); one per agent, shared by its replicas. */
  readonly clock?: HybridClock | undefined
  /** A snapshot to load (from `snapshot()`); throws DecodeError if malformed. */
  readonly snapshot?: Uint8Array | undefined
  /** Limits on untrusted input of the document types (Yjs, Automerge); other types ignore them. */
  readonly limits?: Partial<DocumentLimits> | undefined
  /** The per-sender budget of document updates waiting for a dependency, shared by many replicas (documents only). */
  readonly waitingBudget?: WaitingBudget | undefined
}

/** Creates replicas of one type. */
export interface ReplicaFactory<R extends Replica = Replica> {
  readonly type: ReplicaType
  create(options: ReplicaOptions): R
  /**
   * Merges deltas of this type (as `change` events and `deltaSince` give
   * them) into one delta: applying it to any replica gives the state that
   * applying them in order gives. Optional: a type without it has its deltas
   * logged and shipped one by one. Throws DecodeError on a malformed delta,
   * RangeError on an empty list; a single delta may be returned as it is.
   */
  mergeDeltas?(deltas: readonly Uint8Array[]): Uint8Array
}
