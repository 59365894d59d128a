/**
 * Merged local changes in `async` mode: the local changes of a name queued
 * together are logged as one record (the type's merge of their deltas) and
 * announced by one `committed` event; everything the log offers still holds
 * on merged records (replay on open, hash chain and verify, history, at,
 * revert). Sync mode under `mergeLocal: 'async'`, captures and remote
 * commits keep one record per change, and nothing queued after a unit is
 * ever ordered before it.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import type { Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { openStore, type Store, type StoreOptions } from '../../persistence/index.ts'
import type { CommittedUnitRecord } from '../../persistence/store.ts'
import { settle, tempDir, textOf, typeText } from './helpers.ts'

const asyncMode = { mode: 'async', rpoMs: 50 } as const

async function withStore(options: Partial<StoreOptions>, fn: (store: Store, dir: string) => Promise<void>): Promise<void> {
  const { dir, remove } = await tempDir('concord-merge-')
  const store = await openStore({ dir, agentId: 'me', sweepMs: 0, durability: asyncMode, ...options })
  try {
    await fn(store, dir)
  } finally {
    await store.close()
    await remove()
  }
}

/** Collects `committed` events. */
function units(store: Store): Array<{ records: readonly CommittedUnitRecord[]; origin?: unknown }> {
  const seen: Array<{ records: readonly CommittedUnitRecord[]; origin?: unknown }> = []
  store.events.on('committed', (unit) => seen.push(unit))
  return seen
}

/** Types `count` characters, one transaction each. */
function typeChars(replica: Replica, count: number, char = 'x'): void {
  for (let i = 0; i < count; i++) typeText(replica, char)
}

describe('merged local changes (async mode)', () => {
  it('a run of local changes becomes few records; they replay to the same state after reopening, and verify', async () => {
    const { dir, remove } = await tempDir('concord-merge-')
    try {
      const store = await openStore({ dir, agentId: 'me', sweepMs: 0, durability: asyncMode, checkpoint: { onClose: false } })
      const seen = units(store)
      const doc = await store.open('doc', 'yjs')
      for (let round = 0; round < 5; round++) {
        typeChars(doc, 100)
        await settle()
      }
      await store.flush()
      const seq = store.committedSeq('doc')
      assert.ok(seq >= 2 && seq <= 20, `500 changes in 5 rounds: ${seq} records`)
      assert.equal(seen.length, seq, 'one committed event per record of one name')
      assert.deepEqual(
        seen.map((u) => u.records.map((r) => r.seq)),
        Array.from({ length: seq }, (_, i) => [i + 1]),
      )
      // What sync ships: the merged deltas bring a fresh replica to the same text.
      const shipped = new Y.Doc()
      for (const unit of seen) for (const record of unit.records) Y.applyUpdate(shipped, record.delta)
      assert.equal(shipped.getText('t').toString(), 'x'.repeat(500))
      assert.deepEqual((await store.verify('doc')).problems, [])
      const history = await store.history('doc', { limit: 1000 })
      assert.deepEqual(
        history.map((r) => r.seq),
        Array.from({ length: seq }, (_, i) => i + 1),
      )
      assert.ok(history.every((r) => r.agent === 'me' && r.kind === 'delta'))
      await store.close()
      const again = await openStore({ dir, agentId: 'me', sweepMs: 0 })
      assert.equal(textOf(await again.open('doc', 'yjs')), 'x'.repeat(500))
      assert.equal(again.committedSeq('doc'), seq)
      assert.deepEqual((await again.verify('doc')).problems, [])
      await again.close()
    } finally {
      await remove()
    }
  })

  it('at(seq) at a merged record is the state replaying the records up to it gives; revert to it', async () => {
    await withStore({}, async (store) => {
      const doc = await store.open('doc', 'yjs')
      const lengths: number[] = []
      store.events.on('committed', () => lengths.push(textOf(doc).length))
      for (let round = 0; round < 4; round++) {
        typeChars(doc, 10 + round, String.fromCharCode(97 + round))
        await settle()
      }
      await store.flush()
      const history = await store.history('doc')
      assert.ok(history.length < 46, `merged: ${history.length} records for 46 changes`)
      const replay = new Y.Doc()
      for (const record of history) {
        Y.applyUpdate(replay, record.delta)
        const past = await store.at('doc', record.seq)
        assert.equal(textOf(past), replay.getText('t').toString(), `at(${record.seq})`)
      }
      // A record before the last (with two merged records, the middle one was the last: revert to it changes nothing).
      const middle = history[Math.floor((history.length - 1) / 2)].seq
      const expected = textOf(await store.at('doc', middle))
      const seq = await store.revert('doc', middle)
      assert.ok(seq !== null && seq > history.at(-1)!.seq)
      assert.equal(textOf(doc), expected)
      assert.deepEqual((await store.verify('doc')).problems, [])
    })
  })

  it('several names changed together: one unit with one merged record per name, one committed event', async () => {
    await withStore({}, async (store) => {
      const seen = units(store)
      const a = await store.open('a', 'yjs')
      const b = (await store.open('b', 'pncounter')) as PNCounterReplica
      for (let i = 0; i < 50; i++) {
        typeText(a, 'a')
        b.increment()
      }
      await store.flush()
      // The first change may go alone (the pipeline was idle); the rest wait together.
      const last = seen.at(-1)!
      assert.deepEqual(last.records.map((r) => `${r.name}:${r.type}`).sort(), ['a:yjs', 'b:pncounter'])
      assert.ok(seen.length <= 3, `${seen.length} units for 100 changes`)
      assert.equal(
        store.committedSeq('a') + store.committedSeq('b'),
        seen.reduce((n, u) => n + u.records.length, 0),
      )
      const counter = createReplica('pncounter', { agentId: agentId('x') })
      for (const unit of seen) for (const r of unit.records) if (r.name === 'b') counter.applyDelta(r.delta)
      assert.equal(counter.value(), 50)
      const atB = await store.at('b', store.committedSeq('b'))
      assert.equal(atB.value(), 50)
      assert.deepEqual((await store.verify('a')).problems, [])
      assert.deepEqual((await store.verify('b')).problems, [])
    })
  })

  it('a remote commit queued meanwhile closes the unit: later local changes go after it, in the order they were made', async () => {
    await withStore({}, async (store) => {
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      const other = createReplica('yjs', { agentId: agentId('other') }) as YjsReplica
      const remote: Uint8Array[] = []
      other.doc.on('update', (u: Uint8Array) => remote.push(u))
      other.doc.getText('t').insert(0, 'R')
      typeChars(doc, 3, 'a') // wait together (an async batch waits for the end of the turn)
      const applied = store.applyRemote('doc', remote[0], { agent: 'other' })
      typeChars(doc, 3, 'b')
      await applied
      await store.flush()
      const history = await store.history('doc')
      assert.deepEqual(
        history.map((r) => r.agent),
        ['me', 'other', 'me'],
      )
      const replay = new Y.Doc()
      const texts = history.map((r) => {
        Y.applyUpdate(replay, r.delta)
        return replay.getText('t').toString().length
      })
      assert.deepEqual(texts, [3, 4, 7])
      assert.equal(textOf(await store.at('doc', 2)).length, 4)
    })
  })

  it("sync mode under mergeLocal 'async', atomic blocks and a store without merges keep one record per change", async () => {
    await withStore({ durability: { mode: 'sync' }, mergeLocal: 'async' }, async (store) => {
      const doc = await store.open('doc', 'yjs')
      typeChars(doc, 20)
      await store.flush()
      assert.equal(store.committedSeq('doc'), 20)
    })
    await withStore({}, async (store) => {
      const doc = await store.open('doc', 'yjs')
      await store.atomic(() => typeChars(doc, 5))
      assert.equal(store.committedSeq('doc'), 5, 'an atomic block logs each change')
      const seen = units(store)
      await store.atomic(() => typeChars(doc, 3))
      assert.equal(seen.length, 1)
      assert.equal(seen[0].records.length, 3)
    })
    await withStore({ deltaMerger: () => undefined }, async (store) => {
      const doc = await store.open('doc', 'yjs')
      typeChars(doc, 20)
      await store.flush()
      assert.equal(store.committedSeq('doc'), 20)
    })
  })

  it("mergeLocal 'all' (the default): sync-mode changes made while a batch is fsynced join one record, each durable in its batch; provenance and remote commits end the run", async () => {
    await withStore({ durability: { mode: 'sync' } }, async (store, dir) => {
      const seen = units(store)
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      // The first change goes alone into a batch (fsynced); the 19 made while it is written wait together.
      typeChars(doc, 20)
      await store.flush()
      assert.equal(store.committedSeq('doc'), 2)
      assert.deepEqual(
        seen.map((unit) => unit.records.length),
        [1, 1],
        'one committed event per record',
      )
      assert.deepEqual(store.durability().mode, 'sync')
      // A change with a message (its own unit) and a remote commit are never merged into a run.
      const other = createReplica('yjs', { agentId: agentId('other') }) as YjsReplica
      const remote: Uint8Array[] = []
      other.doc.on('update', (u: Uint8Array) => remote.push(u))
      other.doc.getText('t').insert(0, 'R')
      typeChars(doc, 3, 'a')
      const why = store.atomic(() => typeChars(doc, 1, 'm'), { message: 'why' })
      typeChars(doc, 2, 'b')
      const applied = store.applyRemote('doc', remote[0], { agent: 'other' })
      typeChars(doc, 2, 'c')
      await Promise.all([why, applied])
      await store.flush()
      const history = await store.history('doc')
      assert.deepEqual(
        history.slice(2).map((r) => [r.agent, r.message]),
        [
          ['me', undefined],
          ['me', 'why'],
          ['me', undefined],
          ['other', undefined],
          ['me', undefined],
        ],
      )
      const replay = new Y.Doc()
      const lengths = history.map((r) => {
        Y.applyUpdate(replay, r.delta)
        return replay.getText('t').toString().length
      })
      assert.deepEqual(lengths, [1, 20, 23, 24, 26, 27, 29], 'each record holds exactly the changes of its run, in the order they were made')
      assert.deepEqual((await store.verify('doc')).problems, [], 'the hash chain holds')
      const text = textOf(doc)
      await store.close()
      const again = await openStore({ dir, agentId: 'me', sweepMs: 0 })
      assert.equal(textOf(await again.open('doc', 'yjs')), text)
      await again.close()
    })
    await assert.rejects(
      openStore({ agentId: 'me', mergeLocal: 'sometimes' as never }),
      (e: unknown) => (e as { code?: string }).code === 'CONCORD_INVALID_ARGUMENT',
    )
  })

  it('a checkpoint due while changes wait is taken at an exact seq; recovery from it and the merged tail is exact', async () => {
    const { dir, remove } = await tempDir('concord-merge-')
    try {
      const store = await openStore({ dir, agentId: 'me', sweepMs: 0, durability: asyncMode, checkpoint: { everyRecords: 3, onClose: false } })
      const doc = await store.open('doc', 'yjs')
      for (let round = 0; round < 12; round++) {
        typeChars(doc, 7)
        await settle(2)
        // On a loaded machine every round can join one waiting unit; a flush
        // every third round keeps at least four records, so a checkpoint is due.
        if (round % 3 === 2) await store.flush()
      }
      await store.flush()
      assert.ok(store.committedSeq('doc') >= 4, `${store.committedSeq('doc')} records`)
      await store.close()
      const again = await openStore({ dir, agentId: 'me', sweepMs: 0 })
      assert.equal(textOf(await again.open('doc', 'yjs')), 'x'.repeat(84))
      const report = await again.verify('doc')
      assert.deepEqual(report.problems, [])
      assert.ok(report.checkpoints > 0)
      await again.close()
    } finally {
      await remove()
    }
  })
})
