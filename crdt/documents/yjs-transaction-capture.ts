/**
 * What each transaction of a YjsReplica's document emits: the observers
 * every replica's document shares (`beforeTransaction`,
 * `afterTransactionCleanup`), which ask the guard before a local edit (a
 * refused one is tracked and taken back once it is done), tell rollbacks of
 * the replica's undo managers and its own remote applies from local
 * changes, and emit a local change as its v1 update, or, inside a local run
 * whose holder is the only listener, as a delta encoded only when read
 * (yjs-local-run.ts).
 *
 * Plain functions taking the replica (found on the document), not closures
 * per replica: they run for every transaction.
 */
import * as Y from 'yjs'
import type { Emitter } from '../emitter.ts'
import type { ReplicaEvents } from '../replica.ts'
import { changedBy, LazyLocalChange, type YjsLocalRun } from './yjs-local-run.ts'
import { YjsRemoteOrigin } from './yjs-remote-origin.ts'
import { encodeTransactionUpdate } from './yjs-transaction-update.ts'
import { EveryOrigin, YjsUndoRecord } from './yjs-undo-record.ts'

/** What the capture needs of the replica (its `@internal` members; see `YjsReplica`). */
export interface TransactionCaptureTarget {
  readonly doc: Y.Doc
  readonly events: Emitter<ReplicaEvents>
  /** Asked before every local transaction. */
  readonly guard: (() => void) | undefined
  /** The undo managers of the replica: their transactions are rollbacks (`true`: silent, a refused edit's). Made with the first. */
  undoers: WeakMap<Y.UndoManager, boolean> | undefined
  /** Local transactions the guard refused, with the undo record that takes each back. Made with the first. */
  refused: Map<Y.Transaction, YjsUndoRecord> | undefined
  /** The open local run, if any. */
  readonly run: YjsLocalRun | undefined
  /** Transactions of the document so far. */
  transactions: number
}

/**
 * The replica of a document, on the document itself, for the observers
 * every replica's document shares. Not per-replica closures: V8's
 * scavenges kept every replica whose constructor made arrows over `this`
 * (and, under tsx, a class-field arrow holds a property dictionary for its
 * 'name'); not a WeakMap of documents either: scavenges keep a WeakMap's
 * young entries.
 */
const REPLICA: unique symbol = Symbol('concord.yjsReplica')
type DocOfReplica = Y.Doc & { [REPLICA]?: TransactionCaptureTarget }

/** Starts observing the transactions of `replica`'s document. */
export function observeTransactions(replica: TransactionCaptureTarget): void {
  ;(replica.doc as DocOfReplica)[REPLICA] = replica
  replica.doc.on('beforeTransaction', beforeTransaction)
  replica.doc.on('afterTransactionCleanup', afterTransactionCleanup)
}

/** Stops observing the transactions of `doc` (a replica's, being destroyed). */
export function unobserveTransactions(doc: Y.Doc): void {
  doc.off('beforeTransaction', beforeTransaction)
  doc.off('afterTransactionCleanup', afterTransactionCleanup)
  ;(doc as DocOfReplica)[REPLICA] = undefined
}

/** The documents' shared `beforeTransaction` observer. */
function beforeTransaction(transaction: Y.Transaction, doc: DocOfReplica): void {
  const replica = doc[REPLICA]
  if (replica === undefined) return
  const guard = replica.guard
  if (guard === undefined) return
  const origin = transaction.origin
  if ((origin instanceof YjsRemoteOrigin && origin.replica === replica) || (origin instanceof Y.UndoManager && replica.undoers?.has(origin) === true)) return
  try {
    guard()
  } catch {
    // Yjs cannot refuse an edit: track it now, take it back once it is done.
    // The local run's piece ends before it, so that the run holds none of it.
    replica.run?.endPiece()
    replica.refused ??= new Map()
    replica.refused.set(transaction, startUndo(replica, true))
  }
}

/** The documents' shared `afterTransactionCleanup` observer. */
function afterTransactionCleanup(transaction: Y.Transaction, doc: DocOfReplica): void {
  const replica = doc[REPLICA]
  if (replica === undefined) return
  replica.transactions++
  const origin = transaction.origin
  if (origin instanceof YjsRemoteOrigin && origin.replica === replica) return
  const refusal = replica.refused?.get(transaction)
  if (refusal !== undefined) {
    replica.refused!.delete(transaction)
    refusal.undo()
    return
  }
  if (origin instanceof Y.UndoManager && replica.undoers?.has(origin) === true) {
    // A rollback: no change to log. A refused edit's undo is silent (nothing changed, net).
    if (!replica.undoers.get(origin) && changedBy(transaction)) {
      replica.events.emit('change', { delta: encodeTransactionUpdate(transaction), local: true, rollback: true })
    }
    return
  }
  if (!changedBy(transaction)) return
  const run = replica.run
  if (run !== undefined) {
    run.add(transaction)
    if (replica.events.listenerCount('change') <= 1) {
      // Only the run's holder listens, and it reads no delta: encode on read.
      replica.events.emit('change', new LazyLocalChange(transaction))
      return
    }
  }
  replica.events.emit('change', { delta: encodeTransactionUpdate(transaction), local: true })
}

/**
 * An undo record of `replica`'s local transactions from now on (`silent`:
 * a refused edit's, whose undo emits no change); see `YjsReplica.recordUndo`.
 */
export function startUndo(replica: TransactionCaptureTarget, silent: boolean): YjsUndoRecord {
  const manager = new Y.UndoManager(replica.doc, {
    trackedOrigins: new EveryOrigin(),
    captureTimeout: Number.POSITIVE_INFINITY,
    captureTransaction: (transaction) => {
      const origin = transaction.origin
      return transaction.local && !(origin instanceof YjsRemoteOrigin) && !(origin instanceof Y.UndoManager)
    },
  })
  replica.undoers ??= new WeakMap()
  replica.undoers.set(manager, silent)
  return new YjsUndoRecord(manager, (undone) => {
    undone.undo()
    undone.clear()
    undone.destroy()
  })
}
