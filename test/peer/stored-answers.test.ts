/**
 * Answers from storage (issue 15): two LevelDB peers over WebSocket on
 * 127.0.0.1, a first sync of many names into an empty peer. The sender
 * answers from each name's checkpoint and log (`SyncHost.storedDeltas`,
 * persistence/names/stored-state.ts) and hydrates none of them; the
 * receiver converges to the same values. The names storage alone cannot
 * answer fall back to the hydrated path and sync all the same: one the
 * application holds with a change not yet written, one with a torn tail.
 * A commit that lands while an answer reads from storage is in the answer.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { agentId } from '../../crdt/agent-id.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { overlayHost } from '../../peer/host-overlay.ts'
import { StoreSyncHost } from '../../peer/store-sync-host.ts'
import { openStore } from '../../persistence/index.ts'
import { answerInSlices } from '../../sync/answer.ts'
import { logKey, logPrefix } from '../../persistence/format/keys.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

const COUNTERS = 400
const DOCS = 40
const CACHE = 16

const counterName = (i: number): string => `task/${String(i).padStart(4, '0')}`
const docName = (i: number): string => `doc/${String(i).padStart(3, '0')}`

function syncedOnBoth(...peers: Peer[]): Promise<void> {
  return Promise.all(peers.map((peer) => new Promise<void>((resolve) => peer.once('peer-synced', () => resolve())))).then(() => undefined)
}

for (const reconcile of [true, false]) {
  test(`a first sync of ${COUNTERS} counters and ${DOCS} Yjs docs into an empty peer hydrates no name on the sender to answer (${reconcile ? 'reconciliation' : 'VERSIONS'})`, async () => {
    const dir = await tempDir('concord-stored-answers-')
    const peers: Peer[] = []
    try {
      const options = { cacheSize: CACHE, durability: { mode: 'async' as const, rpoMs: 50 }, sync: { reconcile } } satisfies Partial<PeerOptions>
      const aDir = join(dir.path, 'a')
      const seed = await createPeer({ agentId: 'a', dir: aDir, ...options })
      for (let i = 0; i < COUNTERS; i++) (await seed.counter(counterName(i))).increment(i + 1)
      for (let i = 0; i < DOCS; i++) {
        const doc = ((await seed.yjs(docName(i))) as YjsReplica).doc
        doc.getText('t').insert(0, `doc ${i}`)
        doc.getMap('m').set('i', i)
      }
      // Two changes more on one counter, so its log has a record to cut short below.
      ;(await seed.counter(counterName(7))).increment(100)
      await seed.flush()
      ;(await seed.counter(counterName(7))).increment(1000)
      await seed.close()
      // A torn tail on task/0007: its newest record cut short (storage alone cannot answer it; hydration truncates it).
      const storage = await openLevelStorage({ dir: aDir })
      const keys: string[][] = []
      for await (const key of storage.keys({ prefix: logPrefix(counterName(7)) })) keys.push([...key])
      const last = keys.at(-1)
      assert.ok(last, 'task/0007 has records')
      assert.deepEqual(last, [...logKey(counterName(7), keys.length)])
      const value = await storage.get(last)
      assert.ok(value)
      await storage.batch([{ type: 'put', key: last, value: value.slice(0, value.length - 7) }], { sync: true })
      await storage.close()

      const a = await createPeer({ agentId: 'a', dir: aDir, ...options })
      peers.push(a)
      const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options })
      peers.push(b)
      // One counter the application holds, with a change not written yet: answered from its replica, not from storage.
      ;(await a.counter(counterName(3))).increment(10_000)
      const before = a.store.hydrations
      const { url } = (await a.listen()) as { url: string }
      const synced = syncedOnBoth(a, b)
      await b.connect(url)
      await synced
      await until(async () => (await b.store.listNames()).length === COUNTERS + DOCS, 'every name on b', 30_000)
      // With reconciliation, task/0007 alone is hydrated (by the fallback: its torn tail truncated). With VERSIONS the
      // sender's own VERSIONS still hydrates each name once to read its version; the answer adds none but task/0007 (it
      // added ~230 here).
      const hydrated = a.store.hydrations - before
      if (reconcile) assert.ok(hydrated <= 1, `the sender hydrated ${hydrated} names`)
      else assert.ok(hydrated <= COUNTERS + DOCS + 1, `the sender hydrated ${hydrated} names for ${COUNTERS + DOCS}`)
      assert.equal(a.store.truncations.length, 1, 'the torn tail of task/0007 was truncated by hydration')
      for (let i = 0; i < COUNTERS; i++) {
        const expected = i === 3 ? 4 + 10_000 : i === 7 ? 8 + 100 : i + 1
        assert.equal((await b.counter(counterName(i))).value(), expected, counterName(i))
      }
      for (let i = 0; i < DOCS; i++) {
        const doc = ((await b.yjs(docName(i))) as YjsReplica).doc
        assert.equal(doc.getText('t').toString(), `doc ${i}`)
        assert.equal(doc.getMap('m').get('i'), i)
      }
    } finally {
      await Promise.all(peers.map((peer) => peer.close()))
      await dir.remove()
    }
  })
}

test('a commit landing while an answer reads names from storage has those names computed again: the answer holds it', async () => {
  const dir = await tempDir('concord-stored-answers-commit-')
  try {
    const seed = await openStore({ dir: dir.path, agentId: 'a', sweepMs: 0, cacheSize: CACHE })
    for (let i = 0; i < 100; i++) ((await seed.open(counterName(i), 'pncounter')) as PNCounterReplica).increment(1)
    await seed.close()
    const store = await openStore({ dir: dir.path, agentId: 'a', sweepMs: 0, cacheSize: CACHE })
    const base = new StoreSyncHost({ store })
    try {
      let reads = 0
      // The first slice read from storage, then a local commit to its first name (durable, so announced) before the slice is taken.
      const host = overlayHost(base, {
        storedDeltas: async (wanted) => {
          const deltas = await base.storedDeltas(wanted)
          if (reads++ === 0) {
            ;((await store.open(wanted[0].name, 'pncounter')) as PNCounterReplica).increment(50)
            await store.flush()
          }
          return deltas
        },
      })
      const names = await host.list()
      const answer = await answerInSlices([...names], [], { filter: {}, mayRead: () => true, host, malformed: () => assert.fail('malformed') })
      assert.ok(reads > 1, 'several slices read from storage')
      const entries = [...answer.bundles, ...answer.independent].flat()
      assert.equal(entries.length, 100)
      const values = new Map(
        entries.map((entry) => {
          const replica = createReplica('pncounter', { agentId: agentId('remote') })
          replica.applyDelta(entry.delta)
          return [entry.name, replica.value()]
        }),
      )
      assert.equal(values.get(counterName(0)), 51, 'the commit made while its slice was read is in the answer')
      assert.equal(values.get(counterName(1)), 1)
    } finally {
      base.stop()
      await store.close()
    }
  } finally {
    await dir.remove()
  }
})
