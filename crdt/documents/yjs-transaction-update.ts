/**
 * Encoding a Yjs v1 update from the document's struct store, as Yjs does in
 * a transaction's cleanup for its 'update' event (`writeUpdateMessageFromTransaction`,
 * whose helpers Yjs does not export): the structs each client added since a
 * state (`writeClientsStructs`) and a delete set (`writeDeleteSet`), byte
 * for byte the same layout.
 *
 * Read right after the transaction's cleanup, {@link encodeTransactionUpdate}
 * gives exactly the transaction's 'update' bytes; the replica uses it to
 * encode only the updates somebody reads.
 */
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'

const findIndexSS = Y.findIndexSS
const getState = Y.getState

/** The parts of Yjs' (untyped in its exports) delete set this module reads. */
interface DeleteSetLike {
  readonly clients: Map<number, Array<{ readonly clock: number; readonly len: number }>>
}

/** Writes the structs of every client from `since` (0 for clients absent from it) to the store's end. */
function writeClientsStructs(encoder: Y.UpdateEncoderV1, store: Y.Doc['store'], since: Map<number, number>): void {
  const sm = new Map<number, number>()
  since.forEach((clock, client) => {
    if (getState(store, client) > clock) sm.set(client, clock)
  })
  store.clients.forEach((_structs, client) => {
    if (!since.has(client)) sm.set(client, 0)
  })
  encoding.writeVarUint(encoder.restEncoder, sm.size)
  // Higher client ids first, as Yjs writes them.
  for (const [client, from] of [...sm.entries()].sort((a, b) => b[0] - a[0])) {
    const structs = store.clients.get(client)!
    const clock = Math.max(from, structs[0].id.clock)
    const start = findIndexSS(structs, clock)
    encoding.writeVarUint(encoder.restEncoder, structs.length - start)
    encoder.writeClient(client)
    encoding.writeVarUint(encoder.restEncoder, clock)
    const first = structs[start]
    first.write(encoder, clock - first.id.clock)
    for (let i = start + 1; i < structs.length; i++) structs[i].write(encoder, 0)
  }
}

/** Writes a delete set (clients in descending order, as Yjs does). */
function writeDeleteSet(encoder: Y.UpdateEncoderV1, ds: DeleteSetLike): void {
  encoding.writeVarUint(encoder.restEncoder, ds.clients.size)
  for (const [client, items] of [...ds.clients.entries()].sort((a, b) => b[0] - a[0])) {
    encoder.resetDsCurVal()
    encoding.writeVarUint(encoder.restEncoder, client)
    encoding.writeVarUint(encoder.restEncoder, items.length)
    for (const item of items) {
      encoder.writeDsClock(item.clock)
      encoder.writeDsLen(item.len)
    }
  }
}

/**
 * The v1 update of the structs added since `since` (a state vector as a
 * map) and of the deletions in `ds`, read from `doc`'s store now.
 */
export function encodeUpdateSince(doc: Y.Doc, since: Map<number, number>, ds: DeleteSetLike): Uint8Array {
  const encoder = new Y.UpdateEncoderV1()
  writeClientsStructs(encoder, doc.store, since)
  writeDeleteSet(encoder, ds)
  return encoder.toUint8Array()
}

/**
 * A finished transaction's v1 update, as Yjs gives it to 'update'
 * observers: exact when read before any later transaction of the document
 * (later structs of the same clients would be included, and content that a
 * later deletion garbage-collected would be written as deleted).
 */
export function encodeTransactionUpdate(transaction: Y.Transaction): Uint8Array {
  return encodeUpdateSince(transaction.doc, transaction.beforeState, transaction.deleteSet as unknown as DeleteSetLike)
}

/** The union of delete sets (sorted and merged, as Yjs merges them). */
export function mergeDeleteSetsOf(sets: readonly unknown[]): DeleteSetLike {
  return Y.mergeDeleteSets(sets as Parameters<typeof Y.mergeDeleteSets>[0]) as unknown as DeleteSetLike
}
