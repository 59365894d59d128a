/** The store: hydration, durability modes, atomic commits, idempotence, cache, history, lifecycle. */
import assert from 'node:assert/strict'
import { ClassicLevel } from 'classic-level'
import { existsSync, readdirSync } from 'node:fs'
import { describe, it } from 'node:test'
import { yjsReplicaFactory } from '../../crdt/documents/yjs-replica.ts'
import { isConcordError } from '../../crdt/errors.ts'
import type { Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { LEVEL_TABLE_OPTIONS } from '../../persistence/storage/level/open-level-storage.ts'
import { folderBytes } from '../../persistence/storage/level/space-probe.ts'
import { logKey, seqKey } from '../../persistence/format/keys.ts'
import { openStore, type HistoryEntry } from '../../persistence/index.ts'
import { FakeTimers, settle, tempDir, textOf, typeText } from './helpers.ts'
import { localDelta } from '../helpers/local-delta.ts'

/** A delta made on a separate replica: `text` appended by agent `agent`. */
function remoteDelta(text: string, agent = 'remote'): Uint8Array {
  const other = yjsReplicaFactory.create({ agentId: agentId(agent) })
  let delta: Uint8Array | undefined
  other.events.on('change', (event) => {
    delta = event.delta
  })
  typeText(other, text)
  return delta!
}

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code

describe('store', () => {
  it('creates, logs local changes, and restores them after reopening (classic-level)', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const doc = await store.open('doc', 'yjs')
      typeText(doc, 'hello')
      typeText(doc, ' world')
      await store.flush()
      assert.equal(store.persistedSeq('doc'), 2)
      await assert.rejects(store.open('doc', 'automerge'), hasCode('CONCORD_TYPE_MISMATCH'))
      await store.close()
      await assert.rejects(store.open('doc', 'yjs'), hasCode('CONCORD_CLOSED'))

      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      await assert.rejects(store.open('doc', 'automerge'), hasCode('CONCORD_TYPE_MISMATCH'))
      const again = await store.open('doc', 'yjs')
      assert.equal(textOf(again), 'hello world')
      const history = await store.history('doc')
      assert.deepEqual(
        history.map((h) => h.seq),
        [1, 2],
      )
      assert.deepEqual(
        history.map((h) => h.agent),
        ['a', 'a'],
      )
      assert.equal(history[0].hash.length, 64)
      assert.deepEqual((await store.verify('doc')).problems, [])
      await store.close()
      await assert.rejects(openStore({ dir, agentId: 'b' }), hasCode('CONCORD_INVALID_ARGUMENT'))
    } finally {
      await remove()
    }
  })

  it('a delta that adds nothing is not logged: 100 replays change neither state nor log', async () => {
    const store = await openStore({ agentId: 'a', sweepMs: 0 })
    const delta = remoteDelta('x')
    const first = await store.applyRemote('doc', delta, { type: 'yjs', agent: 'remote' })
    assert.deepEqual(first, { changed: true, seq: 1 })
    const doc = await store.open('doc', 'yjs')
    const before = doc.snapshot()
    for (let i = 0; i < 100; i++) assert.deepEqual(await store.applyRemote('doc', delta), { changed: false, seq: 1 })
    assert.deepEqual(doc.snapshot(), before)
    assert.equal((await store.history('doc')).length, 1)
    assert.equal((await store.history('doc'))[0].agent, 'remote')
    await store.close()
  })

  it('commit writes several names as one unit; a bad delta applies nothing; a failed write stores nothing', async () => {
    const storage = await FaultStorage.create()
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0 })
    const names = ['a', 'b', 'c']
    for (const name of names) await store.open(name, 'yjs')
    const results = await store.commit(names.map((name) => ({ name, delta: remoteDelta(name) })))
    assert.deepEqual(
      results.map((r) => r.seq),
      [1, 1, 1],
    )

    const garbage = Uint8Array.of(1, 2, 3, 250, 7)
    await assert.rejects(
      store.commit([
        { name: 'a', delta: remoteDelta('more') },
        { name: 'b', delta: garbage },
      ]),
      hasCode('CONCORD_DECODE_ERROR'),
    )
    assert.equal(textOf(await store.open('a', 'yjs')), 'a')

    storage.fault = (op) => (op === 'batch' ? new Error('EIO: injected') : undefined)
    await assert.rejects(store.commit(names.map((name) => ({ name, delta: remoteDelta(`${name}2`, 'r2') }))), hasCode('CONCORD_STORAGE_ERROR'))
    storage.fault = undefined
    for (const name of names) {
      assert.equal(store.persistedSeq(name), 1)
      assert.equal((await store.history(name)).length, 1)
    }
    await store.close()
  })

  it('an I/O error rejects the append and rolls the document back; the next write logs what the compensation left (a state record)', async () => {
    const storage = await FaultStorage.create()
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0 })
    const errors: unknown[] = []
    store.events.on('error', ({ error }) => errors.push(error))
    const doc = await store.open('doc', 'yjs')
    typeText(doc, 'one ')
    await store.flush()
    storage.fault = (op) => (op === 'batch' ? new Error('ENOSPC: injected') : undefined)
    await assert.rejects(store.applyRemote('doc', remoteDelta('lost? ')), hasCode('CONCORD_STORAGE_ERROR'))
    assert.equal(textOf(doc), 'one ')
    typeText(doc, 'two ')
    await settle()
    assert.ok(errors.some((e) => isConcordError(e, 'CONCORD_STORAGE_ERROR')))
    assert.equal(store.persistedSeq('doc'), 1)
    assert.equal(textOf(doc), 'one ')
    storage.fault = undefined
    typeText(doc, 'three')
    await store.flush()
    assert.equal(textOf(doc), 'one three')
    const history = await store.history('doc')
    assert.deepEqual(
      history.map((h) => [h.seq, h.kind]),
      [
        [1, 'delta'],
        [2, 'state'],
        [3, 'delta'],
      ],
    )
    const restored = await store.at('doc', 3)
    assert.equal(textOf(restored), textOf(doc))
    assert.deepEqual((await store.verify('doc')).problems, [])
    await store.close()
  })

  it('sync mode: concurrent appends share fsyncs (group commit)', async () => {
    const storage = await FaultStorage.create()
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false } })
    await store.open('doc', 'yjs')
    const syncsBefore = storage.syncCount
    const deltas = Array.from({ length: 64 }, (_, i) => remoteDelta(`w${i}`, `agent-${i}`))
    const results = await Promise.all(deltas.map((delta) => store.applyRemote('doc', delta)))
    assert.deepEqual(
      results.map((r) => r.seq).sort((a, b) => a - b),
      Array.from({ length: 64 }, (_, i) => i + 1),
    )
    // The first append is written alone; the 63 that arrived meanwhile share the next fsync.
    assert.ok(storage.syncCount - syncsBefore <= 2, `expected <= 2 fsyncs, got ${storage.syncCount - syncsBefore}`)
    assert.equal(storage.unsyncedBatches, 0)
    await store.close()
  })

  it('async mode: resolves without an fsync, and fsyncs within rpoMs', async () => {
    const storage = await FaultStorage.create()
    const timers = new FakeTimers()
    const store = await openStore({ storage, agentId: 'a', durability: { mode: 'async', rpoMs: 50 }, timers, now: timers.now, sweepMs: 0 })
    const durable: Array<{ name: string; seq: number }> = []
    store.events.on('durable', (event) => durable.push(event))
    await store.open('doc', 'yjs')
    // Creating the name is an async write too: let its fsync come first.
    timers.advance(50)
    await settle()
    assert.equal(storage.unsyncedBatches, 0)
    const syncs = storage.syncCount
    const result = await store.applyRemote('doc', remoteDelta('fast'))
    assert.equal(result.seq, 1)
    assert.equal(storage.syncCount, syncs)
    assert.equal(store.persistedSeq('doc'), 0)
    assert.equal(store.committedSeq('doc'), 1)
    assert.equal(storage.unsyncedBatches, 1)
    timers.advance(49)
    await settle()
    assert.equal(storage.unsyncedBatches, 1)
    timers.advance(1)
    await settle()
    assert.equal(storage.unsyncedBatches, 0)
    assert.equal(store.persistedSeq('doc'), 1)
    assert.deepEqual(durable, [{ name: 'doc', seq: 1 }])
    // A name can override the store's mode.
    await store.open('strict', 'yjs', { durability: { mode: 'sync' } })
    await store.applyRemote('strict', remoteDelta('safe'))
    assert.equal(store.persistedSeq('strict'), 1)
    await store.close()
  })

  it('keeps only cacheSize names hydrated; evicted names reload with their data', async () => {
    const store = await openStore({ agentId: 'a', cacheSize: 16, sweepMs: 0 })
    for (let i = 0; i < 200; i++) await store.applyRemote(`n${i}`, remoteDelta(`v${i}`), { type: 'yjs' })
    assert.ok(store.cachedNames <= 16, `cached ${store.cachedNames}`)
    for (const i of [0, 57, 199]) assert.equal(textOf(await store.open(`n${i}`, 'yjs')), `v${i}`)
    assert.equal((await store.names()).length, 200)
    // A replica still held by the application keeps being persisted after eviction.
    const held = await store.open('n3', 'yjs')
    for (let i = 200; i < 240; i++) await store.applyRemote(`n${i}`, remoteDelta(`v${i}`), { type: 'yjs' })
    typeText(held, '+')
    await store.flush()
    assert.equal(store.committedSeq('n3'), 2)
    assert.equal(await store.open('n3', 'yjs'), held)
    await store.close()
  })

  it('history pages; changes() replays then goes live; at() and revert()', async () => {
    const store = await openStore({ agentId: 'a', sweepMs: 0, retention: 'full' })
    const doc = await store.open('doc', 'yjs')
    for (const word of ['a', 'b', 'c', 'd', 'e']) {
      typeText(doc, word)
      await store.flush()
    }
    assert.deepEqual(
      (await store.history('doc', { from: 2, limit: 2 })).map((h) => h.seq),
      [2, 3],
    )
    assert.deepEqual(
      (await store.history('doc', { reverse: true, limit: 2 })).map((h) => h.seq),
      [5, 4],
    )
    assert.equal(textOf(await store.at('doc', 3)), 'abc')
    assert.equal(textOf(await store.at('doc', 0)), '')
    await assert.rejects(store.at('doc', 6), hasCode('CONCORD_INVALID_ARGUMENT'))

    const controller = new AbortController()
    const seen: HistoryEntry[] = []
    const reader = (async () => {
      for await (const record of store.changes('doc', { since: 4, signal: controller.signal })) {
        seen.push(record)
        if (seen.length === 4) controller.abort()
      }
    })()
    await settle()
    typeText(doc, 'f')
    const reverted = await store.revert('doc', 2)
    assert.equal(reverted, 7)
    assert.equal(textOf(doc), 'ab')
    await reader
    assert.deepEqual(
      seen.map((r) => r.seq),
      [4, 5, 6, 7],
    )
    assert.equal(await store.revert('doc', 7), null)
    assert.deepEqual((await store.verify('doc')).problems, [])
    await store.close()
  })

  it('checkpoints by record count, trims the log to the latest K checkpoints, and verifies', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 10, onClose: false }, retention: { checkpoints: 2 } })
      const checkpoints: number[] = []
      store.events.on('checkpoint', ({ seq }) => checkpoints.push(seq))
      const doc = await store.open('doc', 'yjs')
      for (let i = 0; i < 35; i++) {
        typeText(doc, String(i % 10))
        await store.flush()
      }
      await settle()
      assert.deepEqual(checkpoints, [10, 20, 30])
      const [info] = await store.names()
      assert.equal(info.checkpoints, 2)
      assert.equal(info.records, 15)
      assert.deepEqual((await store.history('doc')).map((h) => h.seq)[0], 21)
      assert.equal(textOf(await store.at('doc', 25)), '0123456789012345678901234')
      await assert.rejects(store.at('doc', 5), hasCode('CONCORD_NOT_FOUND'))
      assert.deepEqual((await store.verify('doc')).problems, [])
      assert.equal(await store.checkpoint('doc'), 35)
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.equal(textOf(await store.open('doc', 'yjs')), '01234567890123456789012345678901234')
      assert.deepEqual(await store.gc(), { deletedRecords: 0, deletedCheckpoints: 0, orphanNames: 0 })
      // Leftovers: a record below the retained range, and keys of a name that no longer exists.
      await store.storage.batch([
        { type: 'put', key: logKey('doc', 3), value: Uint8Array.of(1) },
        { type: 'put', key: ['l', 'ghost', seqKey(1)], value: Uint8Array.of(1) },
        { type: 'put', key: ['c', 'ghost', seqKey(1)], value: Uint8Array.of(1) },
      ])
      assert.deepEqual(await store.gc(), { deletedRecords: 2, deletedCheckpoints: 1, orphanNames: 1 })
      assert.equal(await store.storage.get(logKey('doc', 3)), undefined)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('migrations run in order, are recorded, and newer data is refused', async () => {
    const storage = await FaultStorage.create()
    const mark = (key: string) => (replica: Replica) => {
      typeText(replica, key)
    }
    let store = await openStore({ storage, agentId: 'a', sweepMs: 0 })
    typeText(await store.open('doc', 'yjs'), 'v0;')
    await store.close()
    store = await openStore({ storage, agentId: 'a', sweepMs: 0, schema: { version: 2, migrations: { 2: mark('to2;') } } })
    await assert.rejects(store.open('doc', 'yjs'), hasCode('CONCORD_MIGRATION_FAILED'))
    await store.close()
    store = await openStore({
      storage,
      agentId: 'a',
      sweepMs: 0,
      schema: {
        version: 2,
        migrations: {
          1: () => {
            throw new Error('boom')
          },
          2: mark('to2;'),
        },
      },
    })
    await assert.rejects(store.open('doc', 'yjs'), hasCode('CONCORD_MIGRATION_FAILED'))
    await store.close()
    const migrated: unknown[] = []
    store = await openStore({ storage, agentId: 'a', sweepMs: 0, schema: { version: 2, migrations: { 1: mark('to1;'), 2: mark('to2;') } } })
    store.events.on('migrated', (event) => migrated.push(event))
    assert.equal(textOf(await store.open('doc', 'yjs')), 'v0;to1;to2;')
    assert.deepEqual(migrated, [{ name: 'doc', from: 0, to: 2 }])
    assert.equal((await store.names())[0].schema, 2)
    await store.close()
    store = await openStore({ storage, agentId: 'a', sweepMs: 0, schema: { version: 2, migrations: { 1: mark('to1;'), 2: mark('to2;') } } })
    assert.equal(textOf(await store.open('doc', 'yjs')), 'v0;to1;to2;')
    await store.close()
    store = await openStore({ storage, agentId: 'a', sweepMs: 0, schema: { version: 1 } })
    await assert.rejects(store.open('doc', 'yjs'), hasCode('CONCORD_SCHEMA_TOO_NEW'))
    await store.close()
  })

  it('TTL: the sweep expires names untouched for their TTL, but not recently used ones', async () => {
    const timers = new FakeTimers()
    const store = await openStore({ agentId: 'a', timers, now: timers.now, sweepMs: 1000, ttlMs: 60_000, cacheSize: 1 })
    const expired: string[] = []
    store.events.on('expired', ({ name }) => expired.push(name))
    const run = async (ms: number): Promise<void> => {
      for (let t = 0; t < ms; t += 500) {
        timers.advance(500)
        await settle(10)
      }
    }
    await store.applyRemote('old', remoteDelta('x'), { type: 'yjs' })
    await store.open('short', 'yjs', { ttlMs: 5000 })
    await store.applyRemote('short', remoteDelta('y'))
    const held = await store.open('held', 'yjs') // the most recently used name: kept in memory
    typeText(held, 'z')
    await store.flush()
    await run(3000)
    assert.equal(expired.length, 0)
    await run(3000)
    assert.deepEqual(expired, ['short'])
    await run(56_000)
    assert.deepEqual(expired, ['short', 'old'])
    const remaining = (await store.names()).map((n) => n.name)
    assert.deepEqual(remaining, ['held'])
    assert.deepEqual(await store.expire(), [] as string[])
    assert.equal(textOf(await store.open('old', 'yjs')), '')
    await store.close()
  })

  it('close checkpoints a name only once the records after its newest checkpoint take checkpoint.minBytes (default 4096)', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      typeText(await store.open('small', 'yjs'), 'a few words')
      const big = await store.open('big', 'yjs')
      for (let i = 0; i < 200; i++) typeText(big, `line ${i} of a longer text, typed one transaction at a time. `)
      await store.flush()
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const checkpoints = async () => Object.fromEntries((await store.names()).map((info) => [info.name, info.checkpoints]))
      assert.deepEqual(await checkpoints(), { big: 1, small: 0 })
      // Read only: a small name read is not rewritten as a checkpoint on close either.
      assert.equal(textOf(await store.open('small', 'yjs')), 'a few words')
      await store.close()
      // minBytes 0: every name with records after its newest checkpoint, as before.
      store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { minBytes: 0 } })
      await store.open('small', 'yjs')
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.deepEqual(await checkpoints(), { big: 1, small: 1 })
      assert.equal(textOf(await store.open('small', 'yjs')), 'a few words')
      assert.deepEqual((await store.verify('small')).problems, [])
      await store.close()
    } finally {
      await remove()
    }
  })

  it('archives a name to a compressed file and rehydrates it on open', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0, retention: 'full', mergeLocal: 'async' })
      const doc = await store.open('cold', 'yjs')
      for (const word of ['x', 'y', 'z']) typeText(doc, word)
      typeText(await store.open('warm', 'yjs'), 'w')
      await store.flush()
      const file = await store.archive('cold')
      assert.ok(existsSync(`${dir}.archive/${file}`))
      const listed = await store.names()
      assert.deepEqual(
        listed.map((n) => [n.name, n.archived]),
        [
          ['cold', true],
          ['warm', false],
        ],
      )
      await assert.rejects(store.history('cold'), hasCode('CONCORD_NOT_FOUND'))
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0, retention: 'full' })
      assert.equal(textOf(await store.open('cold', 'yjs')), 'xyz')
      assert.deepEqual(
        (await store.history('cold')).map((h) => h.seq),
        [1, 2, 3],
      )
      assert.deepEqual((await store.verify('cold')).problems, [])
      assert.deepEqual(readdirSync(`${dir}.archive`), [])
      assert.deepEqual(
        (await store.names()).map((n) => [n.name, n.archived]),
        [
          ['cold', false],
          ['warm', false],
        ],
      )
      await store.close()
    } finally {
      await remove()
      await (await import('node:fs/promises')).rm(`${dir}.archive`, { recursive: true, force: true })
    }
  })
})

describe('store: refused remote deltas', () => {
  it('a malformed delta for a new name is refused and leaves no name behind; an existing name is unchanged', async () => {
    const store = await openStore({ agentId: 'r', sweepMs: 0 })
    try {
      await assert.rejects(store.commit([{ name: 'ghost', type: 'orset', delta: new Uint8Array([1, 2, 3]) }]), (error) =>
        isConcordError(error, 'CONCORD_DECODE_ERROR'),
      )
      assert.equal(await store.typeOf('ghost'), undefined)
      assert.deepEqual(
        (await store.names()).map((n) => n.name),
        [],
      )
      // a good delta of another new name in the same commit is not applied either
      const source = await store.open('source', 'orset')
      const good = localDelta(source, () => (source as unknown as { add(v: string): boolean }).add('x'))!
      await assert.rejects(
        store.commit([
          { name: 'fresh', type: 'orset', delta: good },
          { name: 'ghost2', type: 'orset', delta: new Uint8Array([9]) },
        ]),
        (error) => isConcordError(error, 'CONCORD_DECODE_ERROR'),
      )
      assert.equal(await store.typeOf('ghost2'), undefined)
      assert.equal(await store.typeOf('fresh'), undefined)
      assert.deepEqual(source.value(), ['x'])
    } finally {
      await store.close()
    }
  })
})

/** The bytes of a LevelDB folder holding only the live entries of `dir` (written once, as one table). */
async function liveBytes(dir: string): Promise<number> {
  const options = { keyEncoding: 'view', valueEncoding: 'view', ...LEVEL_TABLE_OPTIONS } as const
  const source = new ClassicLevel<Uint8Array, Uint8Array>(dir, options)
  const entries = await source.iterator().all()
  await source.close()
  const copy = await tempDir()
  try {
    const target = new ClassicLevel<Uint8Array, Uint8Array>(copy.dir, options)
    await target.batch(entries.map(([key, value]) => ({ type: 'put' as const, key, value })))
    await target.close()
    // The open writes the log out as a table.
    await target.open()
    await target.close()
    return (await folderBytes(copy.dir)).total
  } finally {
    await copy.remove()
  }
}

it('a clean close compacts a small folder: its session log goes into compressed tables, and the names read back as written', async () => {
  const { dir, remove } = await tempDir()
  try {
    let store = await openStore({ dir, agentId: 'a', sweepMs: 0, cacheSize: 64, durability: { mode: 'async', rpoMs: 20 } })
    const names = Array.from({ length: 2000 }, (_, i) => ({ name: `task/${String(i).padStart(5, '0')}`, type: 'pncounter' as const }))
    for (let round = 1; round <= 3; round++) {
      for (let start = 0; start < names.length; start += 500) {
        for (const counter of await store.openMany(names.slice(start, start + 500))) (counter as unknown as { increment(by: number): void }).increment(round)
      }
      await store.flush()
    }
    const before = await folderBytes(dir)
    assert.ok(before.logs >= 256 * 1024, `the session's log holds ${before.logs} bytes`)
    await store.close()
    const after = await folderBytes(dir)
    assert.ok(after.logs < 64 * 1024, `after the close the logs hold ${after.logs} bytes`)
    assert.ok(after.total < before.total, `${after.total} bytes after the close, ${before.total} before`)
    // What the live entries alone take in a table (no value written twice): the close dropped what the session overwrote.
    const live = await liveBytes(dir)
    assert.ok(after.total <= live * 1.1, `${after.total} bytes after the close, ${live} for the live entries alone`)
    store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    assert.deepEqual(store.losses, [])
    for (const { name } of names.filter((_, i) => i % 97 === 0)) {
      assert.equal(((await store.open(name, 'pncounter')) as unknown as { value(): number }).value(), 6, name)
    }
    assert.equal((await store.listNames()).length, names.length)
    await store.close()
  } finally {
    await remove()
  }
})
