/**
 * Merged local changes through a replica's local run (async mode, Yjs): the
 * run ends exactly where the merging unit stops taking changes, so each
 * record holds exactly its changes: a remote delta applied to the replica
 * directly is still logged, an atomic block or a commit of another name in
 * the middle cuts the run, a full unit ends it, and another `change`
 * listener (exact deltas per change) changes nothing in the log.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { createReplica } from '../../crdt/registry.ts'
import { agentId } from '../../crdt/agent-id.ts'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { settle, tempDir, textOf, typeText } from './helpers.ts'

async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const { dir, remove } = await tempDir('concord-runs-')
  const store = await openStore({ dir, agentId: 'me', sweepMs: 0, durability: { mode: 'async', rpoMs: 50 } })
  try {
    await fn(store)
  } finally {
    await store.close()
    await remove()
  }
}

/** Replays the name's history record by record: each `at(seq)` must equal the replay, and the end the live text. */
async function checkHistory(store: Store, name: string, live: YjsReplica): Promise<number[]> {
  await store.flush()
  const history = await store.history(name, { limit: 100_000 })
  const replay = new Y.Doc()
  const lengths: number[] = []
  for (const record of history) {
    Y.applyUpdate(replay, record.delta)
    assert.equal(textOf(await store.at(name, record.seq)), replay.getText('t').toString(), `at(${record.seq})`)
    lengths.push(replay.getText('t').length)
  }
  assert.equal(replay.getText('t').toString(), textOf(live))
  assert.deepEqual((await store.verify(name)).problems, [])
  return lengths
}

describe('merged local changes through local runs', () => {
  it('a remote delta applied to the replica directly while a run is open is logged', async () => {
    await withStore(async (store) => {
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      const other = createReplica('yjs', { agentId: agentId('other') }) as YjsReplica
      const remote: Uint8Array[] = []
      other.on('change', (event) => remote.push(event.delta))
      for (let i = 0; i < 4; i++) typeText(doc, 'a')
      other.doc.getText('t').insert(0, 'RR')
      assert.equal(doc.applyDelta(remote[0]), true)
      for (let i = 0; i < 4; i++) typeText(doc, 'b')
      const lengths = await checkHistory(store, 'doc', doc)
      assert.equal(lengths.at(-1), 10)
    })
  })

  it('an atomic block and a commit of another name cut the run: each record holds exactly its changes', async () => {
    await withStore(async (store) => {
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      const counter = (await store.open('n', 'pncounter')) as PNCounterReplica
      await settle()
      for (let i = 0; i < 3; i++) typeText(doc, 'a') // merged: an async batch waits for the end of the turn
      const atomic = store.atomic(() => typeText(doc, 'X'))
      for (let i = 0; i < 3; i++) typeText(doc, 'b')
      counter.increment() // joins the same unit (another name)
      const other = store.atomic(() => counter.increment())
      for (let i = 0; i < 2; i++) typeText(doc, 'c')
      // Deleting what the previous units inserted: their records keep the characters.
      doc.doc.getText('t').delete(0, 4)
      await Promise.all([atomic, other])
      const lengths = await checkHistory(store, 'doc', doc)
      assert.deepEqual(lengths, [3, 4, 7, 5])
    })
  })

  it('any unit queued after the merging one ends it (a flush): later changes go after it', async () => {
    await withStore(async (store) => {
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      await settle()
      for (let i = 0; i < 3; i++) typeText(doc, 'a')
      const flushed = store.flush()
      for (let i = 0; i < 3; i++) typeText(doc, 'b')
      await flushed
      assert.deepEqual(await checkHistory(store, 'doc', doc), [3, 6])
    })
  })

  it('a unit ends once its run holds 256 KiB; another change listener leaves the log as it is', async () => {
    await withStore(async (store) => {
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      const seen: Uint8Array[] = []
      const chunk = 'y'.repeat(64 * 1024)
      for (let i = 0; i < 10; i++) typeText(doc, chunk)
      const off = doc.on('change', (event) => seen.push(event.delta))
      for (let i = 0; i < 10; i++) typeText(doc, chunk)
      off()
      const lengths = await checkHistory(store, 'doc', doc)
      assert.ok(lengths.length >= 5, `20 changes of 64 KiB: ${lengths.length} records`)
      assert.equal(seen.length, 10)
      assert.ok(
        seen.every((delta) => delta.length > chunk.length),
        "the other listener got each change's whole delta",
      )
    })
  })

  it('a store adds one change listener to a hydrated name, so its local runs encode no delta per transaction', async () => {
    await withStore(async (store) => {
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      // A second listener (the digest memo's, 8c3df11) made every keystroke encode its own update (B4: ~2.5 us each).
      assert.equal(doc.events.listenerCount('change'), 1)
      const before = store.digestOf('doc')
      typeText(doc, 'a')
      // The digest memo is still forgotten on a change (now by the store's listener).
      const after = store.digestOf('doc')
      assert.ok(before !== undefined && after !== undefined)
      assert.notDeepEqual(after, before)
      typeText(doc, 'b')
      assert.notDeepEqual(store.digestOf('doc'), after)
      assert.equal((await checkHistory(store, 'doc', doc)).at(-1), 2)
    })
  })
})
