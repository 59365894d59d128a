/**
 * Local changes of a YjsReplica collected into one delta (`openLocalRun`,
 * see yjs-replica.ts): a run counts its transactions and encodes their
 * join once, from the struct store, when it closes; a change event whose
 * delta is encoded only when read.
 */
import type * as Y from 'yjs'
import type { ChangeEvent, LocalRun } from '../replica.ts'
import { mergeYjsDeltas } from './merge-deltas.ts'
import { encodeTransactionUpdate, encodeUpdateSince, mergeDeleteSetsOf } from './yjs-transaction-update.ts'

/** What a run needs of the replica that opened it. */
export interface LocalRunOwner {
  readonly doc: Y.Doc
  /** The run closed: the replica stops adding to it. */
  runEnded(run: YjsLocalRun): void
}

/** A local change whose delta is encoded when read (exact until the document's next transaction). */
export class LazyLocalChange implements ChangeEvent {
  readonly local = true
  constructor(private readonly transaction: Y.Transaction) {}
  get delta(): Uint8Array {
    return encodeTransactionUpdate(this.transaction)
  }
}

/** The local changes of a YjsReplica collected into one delta. */
export class YjsLocalRun implements LocalRun {
  bytes = 0
  /** Deltas of the pieces already ended (by a remote delta applied meanwhile). */
  private readonly pieces: Uint8Array[] = []
  /** State before the first transaction of the current piece (none yet: undefined). */
  private since: Map<number, number> | undefined
  /** The delete sets of the current piece's transactions. */
  private deletes: unknown[] = []
  private result: Uint8Array | null | undefined

  constructor(private readonly replica: LocalRunOwner) {}

  /** Counts a local transaction that changed the document in the run. */
  add(transaction: Y.Transaction): void {
    if (this.since === undefined) this.since = transaction.beforeState
    if (transaction.deleteSet.clients.size > 0) {
      this.deletes.push(transaction.deleteSet)
      this.bytes += 4 * transaction.deleteSet.clients.size
    }
    const before = transaction.beforeState
    for (const [client, clock] of transaction.afterState) this.bytes += clock - (before.get(client) ?? 0)
  }

  /** Encodes the current piece now (before a transaction that is not in the run). */
  endPiece(): void {
    if (this.since === undefined) return
    this.pieces.push(encodeUpdateSince(this.replica.doc, this.since, mergeDeleteSetsOf(this.deletes)))
    this.since = undefined
    this.deletes = []
  }

  close(): Uint8Array | null {
    if (this.result !== undefined) return this.result
    this.endPiece()
    this.replica.runEnded(this)
    const { pieces } = this
    this.result = pieces.length === 0 ? null : pieces.length === 1 ? pieces[0] : mergeYjsDeltas(pieces)
    return this.result
  }
}

/** Whether a finished transaction changed the document: new structs or deletions. */
export function changedBy(transaction: Y.Transaction): boolean {
  if (transaction.deleteSet.clients.size > 0) return true
  const before = transaction.beforeState
  for (const [client, clock] of transaction.afterState) {
    if (before.get(client) !== clock) return true
  }
  return false
}
