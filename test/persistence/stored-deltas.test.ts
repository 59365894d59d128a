/**
 * `Store.storedDeltas` (persistence/names/stored-state.ts) on a real LevelDB
 * folder: what a remote lacks of stored names, read from their checkpoint
 * and log without hydrating them (nothing enters the cache), equal to what
 * the hydrated name gives; and the cases it leaves to hydration (undefined):
 * a name in memory, a damaged log, a type or schema other than stored, an
 * unknown name, a malformed remote version.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { agentId } from '../../crdt/agent-id.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { openStore, type Store, type StoreOptions } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { tempDir, typeText } from './helpers.ts'

const options = (dir: string): StoreOptions => ({
  dir,
  agentId: 'a',
  sweepMs: 0,
  retention: 'full',
  // A checkpoint every 4 records: the rebuild starts from one and replays the log after it.
  checkpoint: { everyRecords: 4, everyBytes: 0, onClose: false },
})

const COUNTERS = 20
const DOCS = 5

/** A folder with COUNTERS pncounters (i+1 increments each) and DOCS Yjs docs (6 edits each), closed. */
async function seeded(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const temp = await tempDir('concord-stored-deltas-')
  const store = await openStore(options(temp.dir))
  for (let i = 0; i < COUNTERS; i++) {
    const counter = (await store.open(`c${i}`, 'pncounter')) as Replica & { increment(n?: number): void }
    for (let k = 0; k <= i % 7; k++) {
      counter.increment(k + 1)
      await store.flush()
    }
  }
  for (let i = 0; i < DOCS; i++) {
    const doc = await store.open(`d${i}`, 'yjs')
    for (let k = 0; k < 6; k++) {
      typeText(doc, `${i}${k}`)
      await store.flush()
    }
  }
  // Three records and no checkpoint: the delta is the merge of the records (no replica made).
  const short = await store.open('y3', 'yjs')
  for (let k = 0; k < 3; k++) {
    typeText(short, `y${k}`)
    await store.flush()
  }
  await store.close()
  return temp
}

/** The value of `delta` applied to an empty replica of `type`. */
function applied(type: ReplicaType, delta: Uint8Array | null | undefined): unknown {
  assert.ok(delta instanceof Uint8Array, 'a delta')
  const replica = createReplica(type, { agentId: agentId('remote') })
  replica.applyDelta(delta)
  return JSON.stringify(replica.value())
}

async function withStore<T>(dir: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(options(dir))
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

const wantedAll = [
  ...Array.from({ length: COUNTERS }, (_, i) => ({ name: `c${i}`, type: 'pncounter' as const, since: null })),
  ...Array.from({ length: DOCS }, (_, i) => ({ name: `d${i}`, type: 'yjs' as const, since: null })),
  { name: 'y3', type: 'yjs' as const, since: null },
]

describe('Store.storedDeltas', () => {
  it('answers an empty remote from storage without hydrating, as the hydrated names would', async () => {
    const temp = await seeded()
    try {
      const stored = await withStore(temp.dir, async (store) => {
        const deltas = await store.storedDeltas(wantedAll)
        assert.equal(store.hydrations, 0, 'nothing hydrated')
        assert.equal(store.cachedNames, 0, 'nothing cached')
        return deltas.map((delta, i) => applied(wantedAll[i].type, delta))
      })
      const hydrated = await withStore(temp.dir, async (store) => {
        const values: unknown[] = []
        for (const { name, type } of wantedAll) {
          const replica = await store.open(name, type)
          values.push(applied(type, replica.deltaSince(store.emptyVersion(type))))
        }
        return values
      })
      assert.deepEqual(stored, hydrated)
      assert.equal(stored[3], JSON.stringify(10), 'c3: 1+2+3+4')
      assert.equal(stored.at(-1), JSON.stringify({ t: 'y0y1y2' }), 'y3 from its merged records')
    } finally {
      await temp.remove()
    }
  })

  it('answers a remote part way: its delta brings it to the stored state; null for one that lacks nothing', async () => {
    const temp = await seeded()
    try {
      await withStore(temp.dir, async (store) => {
        // The remote at record 2 of c6 and d1 (time travel gives the version).
        const partial = [await store.at('c6', 2), await store.at('d1', 2)]
        const current = [await store.at('c6', 7), await store.at('d1', 6)]
        const before = store.hydrations
        const deltas = await store.storedDeltas([
          { name: 'c6', type: 'pncounter', since: partial[0].version() },
          { name: 'd1', type: 'yjs', since: partial[1].version() },
          { name: 'c5', type: 'pncounter', since: (await store.at('c5', 6)).version() },
        ])
        assert.equal(store.hydrations, before)
        for (const [i, delta] of deltas.slice(0, 2).entries()) {
          assert.ok(delta instanceof Uint8Array)
          partial[i].applyDelta(delta)
          assert.deepEqual(partial[i].value(), current[i].value())
        }
        assert.equal(deltas[2], null, 'c5 is up to date there')
      })
    } finally {
      await temp.remove()
    }
  })

  it('reads a name in memory from its replica; leaves to hydration a damaged log, another type, an unknown name and a malformed version', async () => {
    const temp = await seeded()
    try {
      // A torn tail on c4 (its newest record cut short): hydration truncates and reports it, storage alone does not answer.
      const storage = await openLevelStorage({ dir: temp.dir })
      const key = logKey('c4', 5)
      const value = await storage.get(key)
      assert.ok(value)
      await storage.batch([{ type: 'put', key, value: value.slice(0, value.length - 7) }], { sync: true })
      await storage.close()
      await withStore(temp.dir, async (store) => {
        const open = (await store.open('c2', 'pncounter')) as Replica & { increment(n?: number): void }
        open.increment(100) // in memory, not flushed yet
        const before = store.hydrations
        const deltas = await store.storedDeltas([
          { name: 'c2', type: 'pncounter', since: null },
          { name: 'c4', type: 'pncounter', since: null },
          { name: 'c1', type: 'yjs', since: null },
          { name: 'nobody', type: 'pncounter', since: null },
          { name: 'c0', type: 'pncounter', since: new Uint8Array([0xff, 0xff, 0xff]) },
          { name: 'c3', type: 'pncounter', since: null },
        ])
        assert.equal(applied('pncounter', deltas[0]), JSON.stringify(1 + 2 + 3 + 100), 'c2 with its change not written yet')
        assert.deepEqual(
          deltas.slice(1, 5).map((delta) => delta === undefined),
          [true, true, true, true],
        )
        assert.equal(applied('pncounter', deltas[5]), JSON.stringify(10))
        assert.equal(store.hydrations, before, 'none hydrated for it')
        assert.equal(store.truncations.length, 0, 'the torn tail is left for hydration to handle')
        // Hydration still does: the torn tail truncated, its value the intact records'.
        const c4 = await store.open('c4', 'pncounter')
        assert.equal(c4.value(), 1 + 2 + 3 + 4)
        assert.equal(store.truncations.length, 1)
      })
    } finally {
      await temp.remove()
    }
  })
})
