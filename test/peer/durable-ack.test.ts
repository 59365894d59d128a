/**
 * A hub relays a remote commit as soon as it is applied, and acknowledges it
 * to its sender only once it is durable; its own changes leave it only once
 * durable. The hub's storage is a real memory-level engine whose fsyncs
 * (`sync: true` batches) are held until the test releases them, so "not yet
 * durable" is a state the test controls, not a race.
 */
import assert from 'node:assert/strict'
import test from 'node:test'
import * as Y from 'yjs'
import { createPeer, type Peer } from '../../peer/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import type { DecodedMessage } from '../../sync/messages.ts'
import { HeldSyncStorage } from '../helpers/held-storage.ts'
import { until, untilSynced } from '../helpers/wait.ts'
import { rawClient } from './helpers/raw-concord-client.ts'

/** The Yjs updates of typing `text` into a fresh document, one per character. */
function typing(text: string): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  for (const char of text) doc.getText('t').insert(doc.getText('t').length, char)
  return updates
}

/** The seqs of the ACKs that acknowledge something new (a repeat of the last one, ACK 0 included, is a keepalive: sync/PROTOCOL.md). */
const acks = (received: readonly DecodedMessage[]): number[] => {
  let last = 0
  return received.flatMap((m) => (m.type === 'ack' && m.seq > last ? [(last = m.seq)] : []))
}

test('a hub relays remote commits once applied, acknowledges them only once durable, and sends its own changes only once durable', async () => {
  const storage = new HeldSyncStorage(await openLevelStorage())
  const peers: Peer[] = []
  const hub = await createPeer({ agentId: 'hub', storage, durability: { mode: 'sync' } })
  peers.push(hub)
  try {
    const { url } = await hub.listen()
    const reader = await createPeer({ agentId: 'reader' })
    peers.push(reader)
    await reader.connect(url)
    const hubDoc = (await hub.yjs('doc')).doc
    const readerText = (await reader.yjs('doc')).doc.getText('t')
    const writer = await rawClient(url, true, { peer: 'writer' })
    await until(() => writer.received.some((m) => m.type === 'versions'), 'the hub opens the session')
    const updates = typing('abc')

    storage.holding = true
    await writer.send({ type: 'delta', seq: 1, entry: { name: 'doc', replicaType: 'yjs', delta: updates[0] } })
    await until(() => readerText.toString() === 'a', 'the reader gets the first commit while the hub still writes it')
    // The next commit is applied too while the first is still being written.
    await writer.send({ type: 'delta', seq: 2, entry: { name: 'doc', replicaType: 'yjs', delta: updates[1] } })
    await until(() => readerText.toString() === 'ab', 'the reader gets the second commit while the hub still writes')
    assert.equal(hubDoc.getText('t').toString(), 'ab')
    assert.ok(storage.held.length >= 1, 'the hub is waiting for an fsync')
    assert.deepEqual(acks(writer.received), [], 'nothing is acknowledged before it is durable')

    // The hub's own change is sent only once durable.
    const durableBefore = storage.durableBatches
    hubDoc.getText('t').insert(0, 'H')
    await writer.send({ type: 'delta', seq: 3, entry: { name: 'doc', replicaType: 'yjs', delta: updates[2] } })
    await until(() => readerText.toString().includes('c'), 'the reader gets the third commit')
    assert.equal(readerText.toString().includes('H'), false, "the hub's own change is not sent before it is durable")
    assert.equal(storage.durableBatches, durableBefore)
    assert.deepEqual(acks(writer.received), [])

    storage.release()
    await until(() => acks(writer.received).at(-1) === 3, 'the writer is acknowledged once the hub wrote everything')
    await until(() => readerText.toString() === hubDoc.getText('t').toString(), 'the reader gets the hub change once it is durable')
    assert.equal(readerText.toString().length, 4)
    writer.ws.close()
  } finally {
    storage.release()
    for (const peer of peers.reverse()) await peer.close()
    await storage.close()
  }
})

test('a DONE that covers commits still being written is acknowledged only once they are durable', async () => {
  const storage = new HeldSyncStorage(await openLevelStorage())
  const hub = await createPeer({ agentId: 'hub', storage, durability: { mode: 'sync' } })
  try {
    const { url } = await hub.listen()
    const hubText = (await hub.yjs('doc')).doc.getText('t')
    const writer = await rawClient(url, true, { peer: 'writer' })
    await until(() => writer.received.some((m) => m.type === 'versions'), 'the hub opens the session')
    const [first] = typing('x')
    storage.holding = true
    await writer.send({ type: 'delta', seq: 1, entry: { name: 'doc', replicaType: 'yjs', delta: first } })
    await writer.send({ type: 'done', seq: 1 })
    await until(() => hubText.toString() === 'x' && storage.held.length >= 1, 'the hub applied the commit and waits for its fsync')
    // The hub, busy with the writer's messages (the DONE waits for the write), says so with a keepalive (a
    // repeat of its last ACK, here 0): by then an early ACK would have come.
    await until(() => writer.received.some((m) => m.type === 'ack'), 'a keepalive of the hub')
    assert.deepEqual(acks(writer.received), [], 'the DONE is not acknowledged before what it covers is durable')
    storage.release()
    await until(() => acks(writer.received).includes(1), 'acknowledged once durable')
    writer.ws.close()
  } finally {
    storage.release()
    await hub.close()
    await storage.close()
  }
})

for (const reconcile of [true, false]) {
  test(`a peer that connects while the hub still writes a name new to it gets that name in its first sync (${reconcile ? 'reconciliation' : 'VERSIONS'})`, async () => {
    // The hub announces a remote commit before it is durable; a session that opens meanwhile is not yet live
    // (the commit is not forwarded on it), so its first answer must hold the name although it is not stored yet.
    const storage = new HeldSyncStorage(await openLevelStorage())
    const sync = { reconcile }
    const peers: Peer[] = []
    const hub = await createPeer({ agentId: 'hub', storage, durability: { mode: 'sync' }, sync })
    peers.push(hub)
    try {
      const { url } = await hub.listen()
      const writer = await createPeer({ agentId: 'writer', sync })
      peers.push(writer)
      await writer.connect(url)
      await untilSynced(writer, 'hub')
      storage.holding = true
      ;(await writer.counter('fresh')).increment(5)
      await until(() => storage.held.length >= 1 && hub.status().sessions[0].commitsIn >= 1, 'the hub applied the new name and waits for its fsync')
      const reader = await createPeer({ agentId: 'reader', sync, names: { names: ['fresh'] } })
      peers.push(reader)
      await reader.connect(url)
      await untilSynced(reader, 'hub')
      assert.equal((await reader.counter('fresh')).value(), 5, "the hub's first answer holds the name whose first write is under way")
      assert.ok(storage.held.length >= 1, 'the write was still held')
      storage.release()
      ;(await writer.counter('fresh')).increment()
      await until(async () => (await reader.counter('fresh')).value() === 6, 'live commits follow')
    } finally {
      storage.release()
      for (const peer of peers.reverse()) await peer.close()
      await storage.close()
    }
  })
}
