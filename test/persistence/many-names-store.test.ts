/**
 * A store of many names (issue 15): new names are created without reading
 * storage once the index knows they are absent (and every name it does not
 * know about is still found: stored, archived, evicted, deleted), a commit
 * hydrates its names concurrently, and the names list in pages.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { tempDir } from './helpers.ts'

/** Counts the storage reads (get) a store makes. */
function countGets(storage: FaultStorage): { readonly count: () => number } {
  let gets = 0
  storage.fault = (operation) => {
    if (operation === 'get') gets++
    return undefined
  }
  return { count: () => gets }
}

async function increment(store: Store, name: string, by = 1): Promise<void> {
  const counter = (await store.open(name, 'pncounter')) as PNCounterReplica
  counter.increment(by)
}

it('an empty store creates new names without reading their metadata or archive marker', async () => {
  const storage = await FaultStorage.create()
  const store = await openStore({ storage, agentId: 'a', sweepMs: 0 })
  try {
    const gets = countGets(storage)
    for (let i = 0; i < 50; i++) await increment(store, `new-${i}`)
    await store.flush()
    assert.equal(gets.count(), 0, 'no storage read for a name the index knows is absent')
    assert.equal((await store.listNames()).length, 50)
  } finally {
    await store.close()
  }
})

it('with the index loaded, only a name it does not know is taken as new: stored, evicted, archived and deleted names are found as they are', async () => {
  const { dir, remove } = await tempDir()
  try {
    let store = await openStore({ dir, agentId: 'a', sweepMs: 0, cacheSize: 2 })
    for (let i = 0; i < 20; i++) await increment(store, `n-${i}`, i + 1)
    await increment(store, 'cold', 7)
    await store.flush()
    await store.archive('cold')
    await store.close()

    store = await openStore({ dir, agentId: 'a', sweepMs: 0, cacheSize: 2 })
    await store.listNames() // the index loads
    for (let i = 0; i < 20; i++) assert.equal(((await store.open(`n-${i}`, 'pncounter')) as PNCounterReplica).value(), i + 1, `n-${i}`)
    assert.equal(((await store.open('cold', 'pncounter')) as PNCounterReplica).value(), 7, 'an archived name is rehydrated, not recreated')
    // Created after the index loaded, evicted (cache of 2), opened again: found.
    for (let i = 0; i < 10; i++) await increment(store, `later-${i}`, 3)
    await store.flush()
    for (let i = 0; i < 10; i++) assert.equal(((await store.open(`later-${i}`, 'pncounter')) as PNCounterReplica).value(), 3)
    // Archived after the index loaded: found again.
    await store.flush()
    await store.archive('n-3')
    assert.equal(((await store.open('n-3', 'pncounter')) as PNCounterReplica).value(), 4)
    // Deleted: created anew, empty.
    await store.flush()
    assert.ok(await store.delete('n-5'))
    assert.equal(((await store.open('n-5', 'pncounter')) as PNCounterReplica).value(), 0)
    // A type mismatch is still seen for a stored name that is not hydrated.
    await assert.rejects(store.open('n-7', 'gset'), (error: unknown) => isConcordError(error, 'CONCORD_TYPE_MISMATCH'))
    await store.close()
  } finally {
    await remove()
  }
})

it('a commit of many names hydrates them concurrently and applies all or none (a type mismatch refuses it whole)', async () => {
  const { dir, remove } = await tempDir()
  try {
    let store = await openStore({ dir, agentId: 'a', sweepMs: 0, cacheSize: 4 })
    for (let i = 0; i < 100; i++) await increment(store, `c-${i}`)
    await store.flush()
    // A delta from another replica for each name, read back from a second store.
    const other = await openStore({ agentId: 'b', sweepMs: 0 })
    const deltas: Array<{ name: string; delta: Uint8Array; type: 'pncounter' }> = []
    for (let i = 0; i < 150; i++) {
      const counter = (await other.open(`c-${i}`, 'pncounter')) as PNCounterReplica
      counter.increment(10)
      deltas.push({ name: `c-${i}`, delta: counter.deltaSince(other.emptyVersion('pncounter'))!, type: 'pncounter' })
    }
    await other.close()
    await store.close()
    store = await openStore({ dir, agentId: 'a', sweepMs: 0, cacheSize: 4 })
    await assert.rejects(store.commit([...deltas.slice(0, 120), { name: 'c-50', delta: deltas[0].delta, type: 'gset' as never }]), (error: unknown) =>
      isConcordError(error, 'CONCORD_TYPE_MISMATCH'),
    )
    assert.equal((await store.listNames()).length, 100, 'no name of the refused commit was created')
    const results = await store.commit(deltas)
    assert.equal(results.length, 150)
    for (let i = 0; i < 150; i++) assert.equal(((await store.open(`c-${i}`, 'pncounter')) as PNCounterReplica).value(), i < 100 ? 11 : 10)
    await store.close()
  } finally {
    await remove()
  }
})

it('pageNames: pages in key order with a prefix, a cursor and a filter, archived names included, reading about a page', async () => {
  const { dir, remove } = await tempDir()
  try {
    const store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    try {
      for (let i = 0; i < 230; i++) await increment(store, `task/${String(i).padStart(4, '0')}`)
      for (const name of ['other/a', 'other/b', 'tas', 'task', 'tasks/x', 'zz/\u{1F600}', 'zz/\uFFFD']) await increment(store, name)
      await store.flush()
      await store.archive('task/0100')
      await store.archive('tasks/x')

      const walk = async (options: { prefix?: string; limit?: number; where?: (info: { name: string }) => boolean }): Promise<string[]> => {
        const out: string[] = []
        let cursor: string | undefined
        for (let pages = 0; ; pages++) {
          assert.ok(pages < 1000)
          const page = await store.pageNames({ ...options, cursor })
          assert.ok(page.names.length <= (options.limit ?? 100))
          out.push(...page.names.map((info) => info.name))
          if (page.cursor === undefined) return out
          assert.equal(page.cursor, page.names.at(-1)!.name)
          cursor = page.cursor
        }
      }
      const all = (await store.names()).map((info) => info.name)
      const byCodePoint = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b))
      assert.deepEqual(await walk({ limit: 40 }), [...all].sort(byCodePoint))
      assert.deepEqual(
        await walk({ prefix: 'task/', limit: 17 }),
        all.filter((name) => name.startsWith('task/')),
      )
      assert.deepEqual(await walk({ prefix: 'task' }), ['task', ...all.filter((name) => name.startsWith('task/')), 'tasks/x'])
      assert.deepEqual(await walk({ prefix: 'zz/', limit: 1 }), ['zz/\uFFFD', 'zz/\u{1F600}'])
      const even = (info: { name: string }): boolean => info.name.startsWith('task/') && Number(info.name.slice(5)) % 2 === 0
      assert.deepEqual(
        await walk({ where: even, limit: 25 }),
        all.filter((name) => even({ name })),
      )
      const page = await store.pageNames({ prefix: 'task/', limit: 3, cursor: 'task/0099' })
      assert.deepEqual(
        page.names.map((info) => [info.name, info.archived, info.type]),
        [
          ['task/0100', true, 'pncounter'],
          ['task/0101', false, 'pncounter'],
          ['task/0102', false, 'pncounter'],
        ],
      )
      assert.deepEqual(await store.pageNames({ prefix: 'nothing/' }), { names: [], cursor: undefined })
      for (const limit of [0, -1, 1.5, 10_001]) {
        await assert.rejects(store.pageNames({ limit }), (error: unknown) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'))
      }
    } finally {
      await store.close()
    }
  } finally {
    await remove()
  }
})

it("a hydrated name's digest, kept between changes, follows every change, an undone atomic block included", async () => {
  const { dir, remove } = await tempDir()
  try {
    let store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    const counter = (await store.open('c', 'pncounter')) as PNCounterReplica
    counter.increment(1)
    await store.flush()
    const first = store.digestOf('c')!
    assert.deepEqual(store.digestOf('c'), first, 'the same while nothing changes')
    counter.increment(2)
    const second = store.digestOf('c')!
    assert.notDeepEqual(second, first, 'a change makes a new digest')
    await assert.rejects(
      store.atomic(() => {
        counter.increment(5)
        assert.notDeepEqual(store.digestOf('c'), second)
        throw new Error('undo it')
      }),
      /undo it/,
    )
    assert.equal(counter.value(), 3)
    assert.deepEqual(store.digestOf('c'), second, 'the undone block leaves the digest as it was')
    await store.flush()
    await store.close()
    store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    await store.listNames()
    assert.deepEqual(store.digestOf('c'), second, 'the stored digest is the one the live replica gave')
    await store.close()
  } finally {
    await remove()
  }
})

it('openMany opens existing names and creates new ones, storing the new ones in one batch; bad requests are refused before anything is created', async () => {
  const storage = await FaultStorage.create()
  const store = await openStore({ storage, agentId: 'a', sweepMs: 0, durability: { mode: 'async', rpoMs: 20 } })
  await increment(store, 'old/1', 5)
  await store.flush()
  const batchesBefore = storage.batchCount
  const asked = [
    { name: 'old/1', type: 'pncounter' as const },
    ...Array.from({ length: 300 }, (_, i) => ({ name: `new/${String(i).padStart(3, '0')}`, type: 'pncounter' as const })),
  ]
  const replicas = (await store.openMany(asked)) as PNCounterReplica[]
  assert.equal(replicas.length, 301)
  assert.equal(replicas[0].value(), 5, 'an existing name opens with its state')
  assert.equal(storage.batchCount - batchesBefore, 1, 'the 300 new names were stored in one batch')
  assert.equal((await store.openMany([{ name: 'old/1', type: 'pncounter' }]))[0], replicas[0], 'the same replica as open gives')
  await assert.rejects(
    store.openMany([
      { name: 'dup', type: 'pncounter' },
      { name: 'dup', type: 'pncounter' },
    ]),
    (error) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'),
  )
  await assert.rejects(store.openMany([{ name: 'old/1', type: 'orset' }]), (error) => isConcordError(error, 'CONCORD_TYPE_MISMATCH'))
  await assert.rejects(store.openMany([{ name: '', type: 'pncounter' }]), (error) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'))
  assert.equal(store.knownType('dup'), undefined, 'a refused request created nothing')
  replicas[8].increment(2) // new/007
  await store.close()
  // Stored without a change, and with one: both there after a reopen.
  const again = await openStore({ storage, agentId: 'a', sweepMs: 0 })
  const names = new Set((await again.listNames()).map((info) => info.name))
  assert.equal(names.size, 301)
  assert.equal(((await again.open('new/007', 'pncounter')) as PNCounterReplica).value(), 2)
  assert.equal(((await again.open('new/299', 'pncounter')) as PNCounterReplica).value(), 0)
  await again.close()
  await storage.close()
})
