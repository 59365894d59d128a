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
 *   sees it, then applied in one Yjs transaction whose origin is a
 *   {@link YjsRemoteOrigin}. Returns true when the state vector or the
 *   delete set changed. An update whose dependencies are missing is kept by
 *   Yjs as pending (returned `false`, not in the version yet); the change
 *   event of the delta that completes it carries the completed structs.
 * - Local transactions (on `doc` directly or via the helpers) emit `change`
 *   with `local: true` and the transaction's v1 update; remote ones emit
 *   `local: false` with the delta as received (or, when it completed pending
 *   structs, the transaction's update).
 * - `snapshot()`: the whole state as one v1 update in the document snapshot
 *   envelope (with the gc setting).
 * - `value()`: `{ name: json }` of the non-empty top-level types (see
 *   yjs-view.ts for how kinds are known).
 * - `restore(past)`: one local transaction rewriting what differs.
 *
 * Do not call `applyDelta` inside a transaction of `doc` (it throws
 * `CONCORD_INVALID_ARGUMENT`): the result could not be told.
 */
import * as Y from 'yjs'
import { Emitter, type Unsubscribe } from '../emitter.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'
import type { ChangeEvent, Replica, ReplicaEvents, ReplicaFactory, ReplicaId } from '../replica.ts'
import { resolveLimits, type DocumentLimits, type YjsReplicaOptions } from './options.ts'
import { decodeDocumentSnapshot, encodeDocumentSnapshot } from './snapshot-envelope.ts'
import { validateYjsStateVector, validateYjsUpdate } from './yjs-guard.ts'
import { restoreDocument } from './yjs-restore.ts'
import { documentValue, openTopLevel } from './yjs-view.ts'

/** The Yjs transaction origin of deltas applied through `applyDelta`. */
export class YjsRemoteOrigin {
  constructor(
    /** The replica that applied the delta. */
    readonly replica: YjsReplica,
    /** What the caller passed to `applyDelta`. */
    readonly origin: unknown,
  ) {}
}

/** True when a Yjs transaction origin marks a delta applied by a Concord replica. */
export function isYjsRemoteOrigin(origin: unknown): origin is YjsRemoteOrigin {
  return origin instanceof YjsRemoteOrigin
}

/** Validates a Yjs v1 update against the limits, then returns it (throws DecodeError). */
function checkedUpdate(update: Uint8Array, limits: DocumentLimits): Uint8Array {
  validateYjsUpdate(update, limits)
  return update
}

/** A Y.Doc behind the replica interface. */
export class YjsReplica implements Replica {
  readonly type = 'yjs' as const
  readonly replicaId: ReplicaId
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

  private readonly onUpdate = (update: Uint8Array, origin: unknown): void => {
    if (origin instanceof YjsRemoteOrigin && origin.replica === this) {
      this.pendingRemoteUpdate = update
      return
    }
    this.events.emit('change', { delta: update, local: true })
  }

  private readonly onAfterTransaction = (transaction: Y.Transaction): void => {
    if (!(transaction.origin instanceof YjsRemoteOrigin) || transaction.origin.replica !== this) return
    let changed = transaction.deleteSet.clients.size > 0
    if (!changed) {
      for (const [client, clock] of transaction.afterState) {
        if (transaction.beforeState.get(client) !== clock) {
          changed = true
          break
        }
      }
    }
    this.remoteChanged = changed
  }

  private remoteChanged = false
  private pendingRemoteUpdate: Uint8Array | undefined

  constructor(options: YjsReplicaOptions) {
    this.replicaId = options.replicaId
    this.limits = resolveLimits(options.limits)
    let payload: Uint8Array | undefined
    let gc = options.gc ?? true
    if (options.snapshot !== undefined) {
      const snapshot = decodeDocumentSnapshot(options.snapshot, 'yjs')
      payload = checkedUpdate(snapshot.payload, this.limits)
      gc = options.gc ?? snapshot.gc
    }
    this.gc = gc
    this.doc = new Y.Doc({ gc })
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
    this.doc.on('update', this.onUpdate)
    this.doc.on('afterTransaction', this.onAfterTransaction)
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
    validateYjsUpdate(delta, this.limits)
    if (this.doc._transaction !== null) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'yjs replica: applyDelta inside a transaction of its doc')
    }
    // The transaction's own update is only needed when the delta may complete
    // structs Yjs held as pending; otherwise the delta as received is the change
    // and Yjs need not re-encode it.
    const completesPending = this.doc.store.pendingStructs !== null || this.doc.store.pendingDs !== null
    if (!completesPending) this.doc.off('update', this.onUpdate)
    this.remoteChanged = false
    this.pendingRemoteUpdate = undefined
    try {
      Y.applyUpdate(this.doc, delta, new YjsRemoteOrigin(this, origin))
    } catch (cause) {
      // Not reachable for a validated update as far as we know; report it typed.
      throw new DecodeError(`yjs update rejected by Yjs: ${(cause as Error)?.message ?? cause}`, { cause })
    } finally {
      if (!completesPending) this.doc.on('update', this.onUpdate)
    }
    if (!this.remoteChanged) return false
    const event = this.pendingRemoteUpdate ?? delta
    this.pendingRemoteUpdate = undefined
    this.events.emit('change', { delta: event, local: false, origin })
    return true
  }

  snapshot(): Uint8Array {
    let payload = Y.encodeStateAsUpdate(this.doc)
    if (this.doc.store.pendingStructs !== null || this.doc.store.pendingDs !== null) {
      // Structs Yjs holds as pending are encoded as they arrived; loading the
      // snapshot may integrate some of them (their dependencies now come in
      // the same update) and encode them differently. Normalise through a
      // scratch doc so that snapshot -> load -> snapshot is byte-equal.
      const scratch = new Y.Doc({ gc: this.gc })
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
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `yjs restore: the past version is a ${past.type} replica`)
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
    this.doc.off('update', this.onUpdate)
    this.doc.off('afterTransaction', this.onAfterTransaction)
    this.doc.destroy()
  }
}

/** Creates Yjs replicas (type `yjs`); accepts {@link YjsReplicaOptions}. */
export const yjsReplicaFactory: ReplicaFactory<YjsReplica> = {
  type: 'yjs',
  create: (options) => new YjsReplica(options),
}
