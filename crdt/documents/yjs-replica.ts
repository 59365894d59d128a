/**
 * A Yjs document (Y.Doc, Yjs 13.6) behind the {@link Replica} interface.
 *
 * - `version()`: the encoded state vector (`Y.encodeStateVector`).
 * - `deltaSince(v)`: `Y.encodeStateAsUpdate(doc, v)`, the v1 update a replica
 *   at `v` lacks, or `null` when it holds no struct and an empty delete set.
 *   A state vector does not record deletions, so once the document holds
 *   deletions every delta carries the whole (run-length) delete set; a
 *   replica that already has it applies it with `false`.
 * - `applyDelta(update)`: validated by {@link validateYjsUpdate} before Yjs
 *   sees it, then applied in one Yjs transaction (remote, `local: false`)
 *   whose origin is a {@link YjsRemoteOrigin}. Returns true when the
 *   transaction added structs or deleted items. An update whose
 *   dependencies are missing waits outside Yjs (returned `false`, not in
 *   the version yet; bounded, see waiting-room.ts and yjs-waiting.ts); the
 *   delta that completes it applies it in the same transaction and its
 *   change event carries the merge of both.
 * - Local transactions (on `doc` directly or via the helpers, including
 *   ones that doc observers make while a remote delta is applied) emit
 *   `change` with `local: true` and the transaction's v1 update; remote ones
 *   emit `local: false` with the delta as received (or, when it released
 *   waiting updates, its merge with them). The replica observes
 *   'afterTransactionCleanup', not 'update': Yjs encodes no update nobody
 *   reads (a remote delta is its own change; the receiver costs about the
 *   guard over bare `Y.applyUpdate`; the observers are
 *   yjs-transaction-capture.ts).
 * - `openLocalRun()`: while a run is open and its holder (the store) is the
 *   only `change` listener, local changes are emitted with a `delta`
 *   encoded only if read, and the run's `close()` encodes their join once,
 *   from the struct store (see yjs-transaction-update.ts). A remote delta
 *   applied meanwhile ends the run's current piece first, so it is not in
 *   the run.
 * - `snapshot()`: the whole state as one v1 update in the document snapshot
 *   envelope (with the gc setting).
 * - `value()`: `{ name: json }` of the non-empty top-level types (see
 *   yjs-view.ts for how kinds are known).
 * - `restore(past)`: one local transaction rewriting what differs.
 * - `recordUndo()`: a Y.UndoManager over the whole document that tracks every
 *   local transaction until the record ends; `undo()` is one compensating
 *   transaction (Yjs cannot drop integrated structs: the undone ones stay
 *   as deleted structs, and a store holding the document logs them with its
 *   next change). A `guard` that refuses an edit gets the same: the edit is
 *   undone the moment its transaction ends, and emits no `change`.
 *
 * Do not call `applyDelta` inside a transaction of `doc` (it throws
 * `CONCORD_INVALID_ARGUMENT`): the result could not be told.
 */
import * as Y from 'yjs'
import { Emitter, type Unsubscribe } from '../emitter.ts'
import { ConcordError, DecodeError, ErrorCodes, withArticle } from '../errors.ts'
import { defineDocumentType, type DocumentTypeDef } from './document-type.ts'
import type { ChangeEvent, LocalRun, PreparedDelta, PrepareOptions, Replica, ReplicaEvents, ReplicaFactory, UndoRecord } from '../replica.ts'
import type { AgentId } from '../agent-id.ts'
import { mergeYjsDeltas } from './merge-deltas.ts'
import { resolveLimits, stricterLimits, type DocumentLimits, type YjsReplicaOptions } from './options.ts'
import { decodeDocumentSnapshot, encodeDocumentSnapshot } from './snapshot-envelope.ts'
import { checkYjsDeltaSize, validateYjsStateVector, validateYjsUpdate } from './yjs-guard.ts'
import { restoreDocument } from './yjs-restore.ts'
import { changedBy, YjsLocalRun } from './yjs-local-run.ts'
import { YjsRemoteOrigin } from './yjs-remote-origin.ts'
import { observeTransactions, startUndo, unobserveTransactions } from './yjs-transaction-capture.ts'
import type { YjsUndoRecord } from './yjs-undo-record.ts'
import { documentValue, openTopLevel } from './yjs-view.ts'
import { type WaitingBudget, WaitingRoom, type WaitingStats } from './waiting-room.ts'
import { YjsDependencies } from './yjs-waiting.ts'

export { YjsRemoteOrigin, isYjsRemoteOrigin } from './yjs-remote-origin.ts'

// Read once: a namespace member access goes through a getter on every call
// in the CommonJS interop, and applyDelta runs once per remote update.
const applyUpdate = Y.applyUpdate
const transact = Y.transact
const getState = Y.getState
const randomUUID: (() => string) | undefined = globalThis.crypto?.randomUUID?.bind(globalThis.crypto)

/**
 * A guid for a new Y.Doc. Yjs's default (lib0 uuidv4) draws each of its 31
 * random hex digits through its own `crypto.getRandomValues` call, about 100
 * µs per document on Node (17% of opening 10,000 small documents, issue
 * 19); `crypto.randomUUID` draws from a pooled buffer. Undefined (Yjs's
 * default) where there is none (a browser page outside a secure context).
 */
function newGuid(): string | undefined {
  const guid = randomUUID?.()
  // Node builds the UUID by concatenation: a rope of 16 pieces (about 480
  // bytes held by every document) until something reads a character of it,
  // which flattens it in place (64 bytes).
  guid?.charCodeAt(0)
  return guid
}

/** The body of a remote apply's transaction: its origin is the applying replica's {@link YjsRemoteOrigin}. */
function applyInTransaction(transaction: Y.Transaction): Y.Transaction {
  ;(transaction.origin as YjsRemoteOrigin).replica.applyInTransaction(transaction)
  return transaction
}

/**
 * The dependencies object remote applies share (a replica keeps none of its
 * own between updates); one nested in another's transaction makes its own.
 */
let sharedDependencies: YjsDependencies | undefined
let sharedDependenciesBusy = false

/** Validates a Yjs v1 update against the limits, then returns it (throws DecodeError). */
function checkedUpdate(update: Uint8Array, limits: DocumentLimits): Uint8Array {
  validateYjsUpdate(update, limits)
  return update
}

/** The waiting stats of a replica no update ever waited in. */
const NO_WAITING: WaitingStats = { updates: 0, bytes: 0, dropped: 0, released: 0 }
/** What a remote delta did with waiting updates when it neither waited nor let any in. */
const NOTHING_WAITED: { readonly held?: Uint8Array; readonly released: readonly Uint8Array[] } = { released: [] }

/** A Y.Doc behind the replica interface. */
export class YjsReplica implements Replica {
  readonly type = 'yjs' as const
  readonly agentId: AgentId
  readonly events = new Emitter<ReplicaEvents>()

  /** Listens to `change` events (local mutations and remote deltas that changed the state); returns an unsubscribe. */
  on(event: 'change', listener: (event: ChangeEvent) => void): Unsubscribe {
    return this.events.on(event, listener)
  }
  /** The Yjs document. Edit it freely: every local transaction emits `change`. */
  readonly doc: Y.Doc
  /** Whether Yjs garbage-collects deleted content in this document. */
  readonly gc: boolean
  /** The limits enforced on deltas and snapshots. */
  readonly limits: DocumentLimits

  /** See {@link Replica.guard}: asked before every local transaction. */
  guard: (() => void) | undefined
  // The members marked @internal below are the transaction capture's (yjs-transaction-capture.ts, TransactionCaptureTarget).
  /** @internal the undo managers of this replica: their transactions are rollbacks (`true`: silent, a refused edit's). Made with the first. */
  undoers: WeakMap<Y.UndoManager, boolean> | undefined
  /** @internal local transactions the guard refused, with the undo record that takes each back. Made with the first. */
  refused: Map<Y.Transaction, YjsUndoRecord> | undefined

  /** @internal the open local run, if any. */
  run: YjsLocalRun | undefined
  /** The origin of the last remote apply, reused while the caller's origin is the same. */
  private lastRemote: YjsRemoteOrigin | undefined
  /** A dependencies object for the next {@link prepareDelta} (given back by `apply`). */
  private spareDependencies: YjsDependencies | undefined
  /** @internal transactions of the document so far (a prepared delta's dependencies are read again when it moved). */
  transactions = 0
  /** Updates waiting for a missing dependency, held outside Yjs (see waiting-room.ts); made when the first one waits. */
  private waiting: WaitingRoom<number, number[]> | undefined
  private readonly waitingBudget: WaitingBudget | undefined
  /** Updates Yjs itself left pending although every dependency was there (a hostile update), dropped. */
  private unresolvable = 0
  /** The delta being applied and, when updates wait, the clients it moves on (read by the transaction callback). */
  private applying: Uint8Array | undefined
  private applyingClients: number[] | undefined
  /** Waiting updates applied with the current delta. */
  private released: Uint8Array[] = []
  /** What the last remote delta did with waiting updates (see {@link lastApply}). */
  private last: { readonly held?: Uint8Array | undefined; readonly released: readonly Uint8Array[] } = NOTHING_WAITED
  /** @internal the body of a remote apply's transaction (see the module's `applyInTransaction`). */
  applyInTransaction(transaction: Y.Transaction): void {
    const doc = this.doc
    applyUpdate(doc, this.applying!, transaction.origin)
    const clients = this.applyingClients
    if (clients === undefined) return
    // Updates that waited for what this delta brought: each applied once, in the same transaction.
    const waiting = this.waiting!
    for (let moved: number[] | undefined = clients; moved !== undefined; ) {
      for (const client of moved) waiting.advance(client, getState(doc.store, client))
      const next = waiting.next()
      if (next === undefined) break
      applyUpdate(doc, next.bytes, transaction.origin)
      this.released.push(next.bytes)
      moved = next.context
    }
  }

  constructor(options: YjsReplicaOptions) {
    this.agentId = options.agentId
    this.limits = resolveLimits(options.limits)
    let payload: Uint8Array | undefined
    let gc = options.gc ?? true
    if (options.snapshot !== undefined) {
      const snapshot = decodeDocumentSnapshot(options.snapshot, 'yjs')
      payload = checkedUpdate(snapshot.payload, this.limits)
      gc = options.gc ?? snapshot.gc
    }
    this.gc = gc
    this.doc = new Y.Doc({ gc, guid: newGuid() })
    if (options.clientId !== undefined) {
      if (!Number.isSafeInteger(options.clientId) || options.clientId < 0) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `yjs replica: client id ${options.clientId} is not a non-negative safe integer`)
      }
      this.doc.clientID = options.clientId
    }
    for (const [name, kind] of Object.entries(options.types ?? {})) openTopLevel(this.doc, name, kind)
    if (payload !== undefined) {
      try {
        Y.applyUpdate(this.doc, payload)
      } catch (cause) {
        throw new DecodeError(`yjs snapshot: ${(cause as Error)?.message ?? cause}`, { cause })
      }
    }
    observeTransactions(this)
    this.waitingBudget = options.waitingBudget
  }

  /**
   * Records the local transactions from now on (see {@link Replica.recordUndo}).
   * While the record is open, content they delete is kept (not garbage
   * collected) so that `undo` can bring it back.
   */
  recordUndo(): UndoRecord {
    this.run?.endPiece()
    return startUndo(this, false)
  }

  /** Starts a run of local changes (see {@link Replica.openLocalRun}); ends the current one's piece. */
  openLocalRun(): LocalRun {
    this.run?.endPiece()
    this.run = new YjsLocalRun(this)
    return this.run
  }

  /** @internal called by a run when it closes. */
  runEnded(run: YjsLocalRun): void {
    if (this.run === run) this.run = undefined
  }

  version(): Uint8Array {
    return Y.encodeStateVector(this.doc)
  }

  deltaSince(version: Uint8Array): Uint8Array | null {
    validateYjsStateVector(version, this.limits)
    const update = Y.encodeStateAsUpdate(this.doc, version)
    return update.length === 2 && update[0] === 0 && update[1] === 0 ? null : update
  }

  applyDelta(delta: Uint8Array, origin?: unknown): boolean {
    const shared = !sharedDependenciesBusy
    const dependencies = shared ? (sharedDependencies ??= new YjsDependencies()) : new YjsDependencies()
    if (shared) sharedDependenciesBusy = true
    try {
      dependencies.reset(this.doc)
      checkYjsDeltaSize(validateYjsUpdate(delta, this.limits, dependencies), this.limits)
      return this.integrate(delta, origin, dependencies) !== null
    } finally {
      if (shared) {
        dependencies.release()
        sharedDependenciesBusy = false
      }
    }
  }

  /**
   * Checks a remote update (see {@link Replica.prepareDelta}): the guard's
   * walk, against the stricter of this replica's limits and `options.limits`,
   * which also reads what the update depends on. `apply` walks it again only
   * when the document changed since (its dependencies are judged against
   * the state they meet).
   */
  prepareDelta(delta: Uint8Array, options: PrepareOptions = {}): PreparedDelta {
    const limits = stricterLimits(this.limits, options.limits)
    const dependencies = this.spareDependencies ?? new YjsDependencies(this.doc)
    this.spareDependencies = undefined
    dependencies.reset()
    checkYjsDeltaSize(validateYjsUpdate(delta, limits, dependencies), limits)
    if (options.strict === true) this.checkNoTransaction()
    const at = this.transactions
    let applied = false
    const replica = this
    // A method, not an arrow (see CausalReplica.prepareDelta).
    return {
      apply(origin) {
        if (applied) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a prepared delta is applied once')
        applied = true
        if (replica.transactions !== at) {
          dependencies.reset()
          validateYjsUpdate(delta, limits, dependencies)
        }
        try {
          return replica.integrate(delta, origin, dependencies)
        } finally {
          replica.spareDependencies ??= dependencies
        }
      },
    }
  }

  private checkNoTransaction(): void {
    if (this.doc._transaction !== null) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'yjs replica: applyDelta inside a transaction of its doc')
    }
  }

  /**
   * Applies a checked update whose dependencies were read: held if it cannot
   * integrate yet, else in one transaction with the waiting updates it lets
   * in. Returns what changed the document (the update, or its merge with
   * those), or null.
   */
  private integrate(delta: Uint8Array, origin: unknown, dependencies: YjsDependencies): Uint8Array | null {
    this.checkNoTransaction()
    const doc = this.doc
    this.last = NOTHING_WAITED
    const unmet = dependencies.unmet()
    if (unmet !== undefined) {
      // Not integrable yet: held outside Yjs (bounded; dropped and counted when full).
      const held = (this.waiting ??= new WaitingRoom(this.limits, this.waitingBudget)).hold(delta, origin, unmet, dependencies.clients())
      if (held) this.last = { held, released: [] }
      return null
    }
    // The local run's changes so far are encoded before this delta touches the store.
    this.run?.endPiece()
    let remote = this.lastRemote
    if (remote === undefined || remote.origin !== origin) this.lastRemote = remote = new YjsRemoteOrigin(this, origin)
    this.applying = delta
    this.applyingClients = this.waiting !== undefined && this.waiting.size > 0 ? dependencies.clients() : undefined
    let transaction: Y.Transaction
    try {
      // Our own transaction (remote: local = false, as Y.applyUpdate makes it),
      // so that what changed is read from it without an afterTransaction observer.
      transaction = transact(doc, applyInTransaction, remote, false)
    } catch (cause) {
      // Not reachable for a validated update as far as we know; report it typed.
      throw new DecodeError(`yjs update rejected by Yjs: ${(cause as Error)?.message ?? cause}`, { cause })
    } finally {
      this.applying = undefined
      this.applyingClients = undefined
    }
    const released = this.released
    if (released.length > 0) this.released = []
    if (doc.store.pendingStructs !== null || doc.store.pendingDs !== null) {
      // Every reference was there, yet Yjs parked structs (a hostile update
      // whose structs reference each other in a cycle): dropped, not retried
      // on every later update.
      doc.store.pendingStructs = null
      doc.store.pendingDs = null
      this.unresolvable++
    }
    if (!changedBy(transaction)) return null
    if (released.length > 0) this.last = { released }
    // The change carries the waiting updates this delta completed: a store logs what it carries (or, for signed ones, each as it came: releasedByLastApply).
    const event = released.length > 0 ? mergeYjsDeltas([delta, ...released]) : delta
    this.events.emit('change', { delta: event, local: false, origin })
    return event
  }

  /** What the last remote delta did with waiting updates: held (a copy of it), or let in (see Replica.lastApply). */
  lastApply(): { readonly held?: Uint8Array | undefined; readonly released: readonly Uint8Array[] } {
    return this.last
  }

  /** Updates waiting for a missing dependency: held now, dropped over budget, released since creation. */
  waitingStats(): WaitingStats & { readonly unresolvable: number } {
    return { ...(this.waiting?.stats() ?? NO_WAITING), unresolvable: this.unresolvable }
  }

  snapshot(): Uint8Array {
    let payload = Y.encodeStateAsUpdate(this.doc)
    if (this.doc.store.pendingStructs !== null || this.doc.store.pendingDs !== null) {
      // Structs Yjs holds as pending are encoded as they arrived; loading the
      // snapshot may integrate some of them (their dependencies now come in
      // the same update) and encode them differently. Normalise through a
      // scratch doc so that snapshot -> load -> snapshot is byte-equal.
      const scratch = new Y.Doc({ gc: this.gc, guid: newGuid() })
      Y.applyUpdate(scratch, payload)
      payload = Y.encodeStateAsUpdate(scratch)
      scratch.destroy()
    }
    return encodeDocumentSnapshot({ kind: 'yjs', gc: this.gc, payload })
  }

  value(): Record<string, unknown> {
    return documentValue(this.doc)
  }

  restore(past: Replica): Uint8Array | null {
    if (!(past instanceof YjsReplica)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `yjs restore: the past version is ${withArticle(past.type)} replica`)
    }
    let delta: Uint8Array | null = null
    const capture = this.events.on('change', (event) => {
      if (event.local) delta = event.delta
    })
    try {
      this.doc.transact(() => restoreDocument(this.doc, past.doc))
    } finally {
      capture()
    }
    return delta
  }

  /** Stops listening to the doc and destroys it. */
  destroy(): void {
    this.waiting?.clear()
    unobserveTransactions(this.doc)
    this.doc.destroy()
  }
}

/** Creates Yjs replicas (type `yjs`); accepts {@link YjsReplicaOptions}. */
export const yjsReplicaFactory: ReplicaFactory<YjsReplica> = {
  type: 'yjs',
  create: (options) => new YjsReplica(options),
  mergeDeltas: mergeYjsDeltas,
}

/** Yjs: the catalog's entry. */
export const yjsType: DocumentTypeDef<'yjs'> = defineDocumentType({ tag: 'yjs', opener: 'yjs', factory: yjsReplicaFactory })

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** A Yjs document (`.doc` is the Y.Doc), persisted and synced. */
    yjs(name: string, options?: O): Promise<YjsReplica>
  }
}
