import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { openStore } from '../../persistence/index.ts'

// Found by the peer convergence scenario (reordered frames): a document
// change that arrives before its dependency waits inside the document and
// is applied when the dependency comes. The store must log it then, or a
// restart from the log loses it.

test('a store keeps remote Automerge changes that arrived before their dependencies, across a restart', async () => {
  let source = A.init<Record<string, number>>()
  const changes: Uint8Array[] = []
  for (let i = 0; i < 4; i++) {
    source = A.change(source, (doc) => {
      doc[`k${i}`] = i
    })
    changes.push(A.getLastLocalChange(source)!)
  }
  const storage = await openLevelStorage()
  let store = await openStore({ storage, agentId: 'r', sweepMs: 0 })
  for (const index of [3, 1, 2, 0]) await store.applyRemote('doc', changes[index], { type: 'automerge' })
  const live = (await store.open('doc', 'automerge')).value()
  assert.deepEqual(live, { k0: 0, k1: 1, k2: 2, k3: 3 })
  await store.flush()
  store = await openStore({ storage, agentId: 'r', sweepMs: 0 }) // no close: the log alone must hold it
  assert.deepEqual((await store.open('doc', 'automerge')).value(), live)
  await store.close()
  await storage.close()
})

test('a store keeps remote Yjs updates that arrived before their dependencies, across a restart', async () => {
  const source = new Y.Doc()
  const updates: Uint8Array[] = []
  source.on('update', (update: Uint8Array) => updates.push(update))
  for (let i = 0; i < 4; i++) source.getText('t').insert(i, `${i}`)
  const storage = await openLevelStorage()
  let store = await openStore({ storage, agentId: 'r', sweepMs: 0 })
  for (const index of [3, 1, 2, 0]) await store.applyRemote('text', updates[index], { type: 'yjs' })
  const live = (await store.open('text', 'yjs')).value()
  assert.deepEqual(live, { t: '0123' })
  await store.flush()
  store = await openStore({ storage, agentId: 'r', sweepMs: 0 })
  assert.deepEqual((await store.open('text', 'yjs')).value(), live)
  await store.close()
  await storage.close()
})
