/**
 * The commit pipeline and the log tail: group commit gathers every writer a
 * batch released, a backlog is written in bounded batches, checkpoints stay
 * exact whatever is queued, and the name metadata (not rewritten with every
 * append) lags the log without anything reading a stale tail.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { yjsReplicaFactory } from '../../crdt/documents/yjs-replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { metaKey, tailKey } from '../../persistence/format/keys.ts'
import { decodeMeta } from '../../persistence/format/name-meta.ts'
import { openStore, type StoreOptions } from '../../persistence/index.ts'
import { FakeTimers, tempDir, textOf, typeText } from './helpers.ts'

/** Deltas that append `pieces` in order to the text `t`, made on a separate replica. */
function chain(pieces: readonly string[], agent = 'remote'): Uint8Array[] {
  const source = yjsReplicaFactory.create({ agentId: agentId(agent) })
  const deltas: Uint8Array[] = []
  source.events.on('change', (event) => deltas.push(event.delta))
  for (const piece of pieces) typeText(source, piece)
  return deltas
}

const letters = (n: number): string[] => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + (i % 26)))

describe('commit pipeline', () => {
  it('writers released by a batch share the next fsync: one fsync per round', async () => {
    const storage = await FaultStorage.create()
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false } })
    const writers = 16
    const rounds = 12
    for (let w = 0; w < writers; w++) await store.open(`n${w}`, 'yjs')
    const deltas = Array.from({ length: writers }, (_, w) => chain(letters(rounds), `agent-${w}`))
    const syncs = storage.syncCount
    await Promise.all(
      deltas.map(async (list, w) => {
        for (const delta of list) await store.applyRemote(`n${w}`, delta)
      }),
    )
    const used = storage.syncCount - syncs
    assert.ok(used <= rounds + 1, `${writers} writers x ${rounds} rounds took ${used} fsyncs`)
    for (let w = 0; w < writers; w++) assert.equal(store.persistedSeq(`n${w}`), rounds)
    await store.close()
  })

  it('async units queued in one turn share one batch; each resolves once written, and all are there after a reopen', async () => {
    const { dir, remove } = await tempDir('concord-pipeline-async-turn-')
    try {
      const options: StoreOptions = { dir, agentId: 'a', sweepMs: 0, durability: { mode: 'async', rpoMs: 60_000 }, checkpoint: { onClose: false } }
      let store = await openStore(options)
      const names = Array.from({ length: 8 }, (_, i) => `n${i}`)
      for (const name of names) await store.open(name, 'yjs')
      const deltas = names.map((_, i) => chain(['ab'], `agent-${i}`)[0])
      const before = store.durability().batches
      // One turn: the commits of several sockets read together.
      const written = await Promise.all(names.map((name, i) => store.applyRemote(name, deltas[i])))
      assert.ok(written.every((result) => result.changed && result.seq === 1))
      // Before, the first went alone and the rest shared a second batch.
      assert.equal(store.durability().batches - before, 1)
      await store.close()
      store = await openStore(options)
      for (const name of names) assert.equal(textOf(await store.open(name, 'yjs')), 'ab')
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a backlog is written in batches of about 1 MiB; checkpoints taken meanwhile are exact', async () => {
    const storage = await FaultStorage.create()
    const sizes: number[] = []
    storage.fault = (operation, { operations }) => {
      // Bytes of log records per batch (a checkpoint is one value, as big as the state).
      if (operation === 'batch') sizes.push((operations ?? []).reduce((sum, op) => sum + (op.type === 'put' && op.key[0] === 'l' ? op.value.length : 0), 0))
      return undefined
    }
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, retention: 'full', checkpoint: { everyRecords: 40, everyBytes: 0, onClose: false } })
    await store.open('doc', 'yjs')
    const piece = 'x'.repeat(8000)
    const deltas = chain(Array.from({ length: 300 }, () => piece))
    sizes.length = 0
    const results = await Promise.all(deltas.map((delta) => store.applyRemote('doc', delta)))
    assert.deepEqual(
      results.map((r) => r.seq),
      deltas.map((_, i) => i + 1),
    )
    const big = sizes.filter((size) => size > 0)
    assert.ok(big.length >= 3, `300 x 8 KB in ${big.length} batches`)
    for (const size of big) assert.ok(size < (1 << 20) + 9000, `a batch of ${size} bytes of records`)
    const report = await store.verify('doc')
    assert.deepEqual(report.problems, [])
    assert.ok(report.checkpoints >= 1)
    assert.equal(textOf(await store.at('doc', 300)), piece.repeat(300))
    await store.close()
  })

  it('a checkpoint due while changes of the name are queued is taken at an exact seq', async () => {
    const storage = await FaultStorage.create()
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, retention: 'full', checkpoint: { everyRecords: 2, everyBytes: 0, onClose: false } })
    const doc = await store.open('doc', 'yjs')
    const seen: number[] = []
    store.events.on('checkpoint', ({ seq }) => seen.push(seq))
    typeText(doc, 'a')
    await store.flush()
    let step = 'arm'
    // 'c' is changed while the batch holding 'b' is being written: the checkpoint due at seq 2 must wait for it.
    storage.fault = (operation) => {
      if (operation === 'batch' && step === 'arm') {
        step = 'queued'
        typeText(doc, 'c')
      }
      return undefined
    }
    // 'd' is changed once that checkpoint is queued, before the next batch forms.
    store.events.on('commit', ({ seq }) => {
      if (step === 'queued' && seq === 2) {
        step = 'done'
        typeText(doc, 'd')
      }
    })
    typeText(doc, 'b')
    await store.flush()
    await store.flush()
    assert.equal(step, 'done')
    assert.equal(textOf(doc), 'abcd')
    assert.deepEqual(seen, [4])
    assert.deepEqual((await store.verify('doc')).problems, [])
    assert.equal(textOf(await store.at('doc', 3)), 'abc')
    await store.close()
  })
})

describe('log tail beyond the stored metadata', () => {
  const ttlMs = 5000

  /** A store cut off by a power cut after 5 synced appends: the metadata still says lastSeq 0. */
  async function laggingStorage(timers: FakeTimers): Promise<FaultStorage> {
    const storage = await FaultStorage.create()
    const options: StoreOptions = {
      storage,
      agentId: 'a',
      sweepMs: 0,
      timers,
      now: timers.now,
      retention: 'full',
      checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false },
    }
    const store = await openStore(options)
    await store.open('doc', 'yjs', { ttlMs })
    timers.advance(1000)
    for (const delta of chain(letters(5))) await store.applyRemote('doc', delta)
    const survivor = await storage.powerCut({ keep: 0 })
    await store.close().catch(() => undefined)
    const written = decodeMeta((await survivor.get(metaKey('doc')))!, 'doc')
    assert.equal(written.lastSeq, 0, 'the stored metadata lags the log (else this test checks nothing)')
    assert.ok(await survivor.get(tailKey('doc')), 'the name carries a tail marker')
    return survivor
  }

  it('names, history, at, verify and gc read the tail from the log', async () => {
    const timers = new FakeTimers()
    const start = timers.time
    const storage = await laggingStorage(timers)
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, timers, now: timers.now })
    const [info] = await store.names()
    assert.deepEqual([info.name, info.records, info.lastSeq], ['doc', 5, 5])
    assert.ok(info.lastChange >= start + 1000, `lastChange ${info.lastChange} is the newest record's time`)
    assert.deepEqual(
      (await store.history('doc')).map((h) => h.seq),
      [1, 2, 3, 4, 5],
    )
    assert.equal(textOf(await store.at('doc', 3)), 'abc')
    assert.deepEqual((await store.verify('doc')).problems, [])
    assert.deepEqual(await store.gc(), { deletedRecords: 0, deletedCheckpoints: 0, orphanNames: 0 })
    const doc = await store.open('doc', 'yjs')
    assert.equal(textOf(doc), 'abcde')
    assert.equal(store.committedSeq('doc'), 5)
    typeText(doc, 'f')
    await store.flush()
    assert.equal(store.committedSeq('doc'), 6)
    await store.close()
    // A clean close brings the stored metadata up to the log.
    const again = await openStore({ storage, agentId: 'a', sweepMs: 0, timers, now: timers.now })
    assert.equal(decodeMeta((await storage.get(metaKey('doc')))!, 'doc').lastSeq, 6)
    assert.equal(await storage.get(tailKey('doc')), undefined)
    assert.equal(textOf(await again.open('doc', 'yjs')), 'abcdef')
    await again.close()
  })

  it('TTL expiry goes by the newest record, not by the stored metadata', async () => {
    const timers = new FakeTimers()
    const storage = await laggingStorage(timers)
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, timers, now: timers.now })
    // The stored metadata was touched 5.5 s ago, the records 4.5 s ago: not expired yet.
    timers.advance(ttlMs - 1000 + 500)
    assert.deepEqual(await store.expire(), [])
    timers.advance(1000)
    assert.deepEqual(await store.expire(), ['doc'])
    assert.deepEqual(await store.names(), [])
    assert.equal(await storage.get(tailKey('doc')), undefined)
    await store.close()
  })
})

describe('names created by openMany', () => {
  it('the first record writes the metadata with its digest (no tail marker), later ones a marker; both survive a power cut after the ack', async () => {
    const storage = await FaultStorage.create()
    const options: StoreOptions = { storage, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false } }
    const store = await openStore(options)
    const [doc, other] = await store.openMany([
      { name: 'doc', type: 'yjs' },
      { name: 'other', type: 'yjs' },
    ])
    assert.equal(decodeMeta((await storage.get(metaKey('doc')))!, 'doc').lastSeq, 0, 'stored empty, its metadata alone')
    typeText(doc, 'a')
    typeText(other, 'z')
    await store.flush()
    const first = decodeMeta((await storage.get(metaKey('doc')))!, 'doc')
    assert.equal(first.lastSeq, 1, 'the batch of the first record wrote the metadata')
    assert.equal(first.digest?.seq, 1, 'with the digest of the state at that record')
    assert.equal(await storage.get(tailKey('doc')), undefined, 'and no tail marker')
    typeText(doc, 'b')
    await store.flush()
    assert.equal(decodeMeta((await storage.get(metaKey('doc')))!, 'doc').lastSeq, 1, 'a later record does not rewrite the metadata')
    assert.ok(await storage.get(tailKey('doc')), 'it marks the tail')
    const survivor = await storage.powerCut({ keep: 0 })
    await store.close().catch(() => undefined)
    const again = await openStore({ ...options, storage: survivor })
    assert.equal(textOf(await again.open('doc', 'yjs')), 'ab')
    assert.equal(textOf(await again.open('other', 'yjs')), 'z')
    assert.deepEqual((await again.verify('doc')).problems, [])
    await again.close()
  })

  it('a folder written before (an openMany name with metadata at seq 0, a record and a tail marker) opens unchanged', async () => {
    const storage = await FaultStorage.create()
    const options: StoreOptions = { storage, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false } }
    // What the earlier code wrote for an openMany name and its first record: the layout open() still writes.
    const store = await openStore(options)
    const doc = await store.open('doc', 'yjs')
    typeText(doc, 'a')
    await store.flush()
    assert.equal(decodeMeta((await storage.get(metaKey('doc')))!, 'doc').lastSeq, 0)
    assert.ok(await storage.get(tailKey('doc')), 'the earlier layout: a tail marker')
    const survivor = await storage.powerCut({ keep: 0 })
    await store.close().catch(() => undefined)
    const again = await openStore({ ...options, storage: survivor })
    assert.deepEqual(
      (await again.names()).map((info) => [info.name, info.lastSeq]),
      [['doc', 1]],
    )
    const [reopened] = await again.openMany([{ name: 'doc', type: 'yjs' }])
    assert.equal(textOf(reopened), 'a')
    typeText(reopened, 'b')
    await again.flush()
    assert.deepEqual((await again.verify('doc')).problems, [])
    await again.close()
    assert.equal(decodeMeta((await survivor.get(metaKey('doc')))!, 'doc').lastSeq, 2, 'a clean close brings the metadata up to the log')
    assert.equal(await survivor.get(tailKey('doc')), undefined)
  })

  it('a change made just before close, not awaited, is in the metadata the close writes: no tail marker is left', async () => {
    for (const durability of [{ mode: 'sync' }, { mode: 'async', rpoMs: 50 }] as const) {
      const storage = await FaultStorage.create()
      const options: StoreOptions = { storage, agentId: 'a', sweepMs: 0, durability, checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false } }
      const first = await openStore(options)
      typeText(await first.open('doc', 'yjs'), 'a')
      await first.close()
      assert.equal(decodeMeta((await storage.get(metaKey('doc')))!, 'doc').lastSeq, 1, durability.mode)
      // The metadata is up to the log: the next change is the first past it.
      const store = await openStore({ ...options, storage })
      typeText(await store.open('doc', 'yjs'), 'b')
      await store.close()
      assert.equal(decodeMeta((await storage.get(metaKey('doc')))!, 'doc').lastSeq, 2, durability.mode)
      assert.equal(await storage.get(tailKey('doc')), undefined, durability.mode)
      const again = await openStore({ ...options, storage })
      assert.equal(textOf(await again.open('doc', 'yjs')), 'ab')
      await again.close()
    }
  })
})
