/**
 * Changes that are refused change nothing: an `atomic` block that throws, a
 * write the storage refuses, a change over the limit its replica loads
 * back, a change after close. For every type: memory, log and (for the
 * peer) other peers stay as they were.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createReplica } from '../../crdt/registry.ts'
import { isConcordError } from '../../crdt/errors.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import type { AutomergeReplica } from '../../crdt/documents/automerge-replica.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import type { ORSetReplica } from '../../crdt/types/index.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { ALL_TYPES, mutate } from '../sync/helpers/memory-host.ts'
import { settle, tempDir, textOf, typeText } from './helpers.ts'

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
const valueText = (replica: Replica): string => JSON.stringify(replica.value())
const hasCode =
  (code: string) =>
  (error: unknown): boolean =>
    isConcordError(error, code as never)

/** Opens one name of every type and gives each a few logged changes. */
async function openAll(store: Store, random: Prng): Promise<Map<ReplicaType, Replica>> {
  const replicas = new Map<ReplicaType, Replica>()
  for (const type of ALL_TYPES) {
    const replica = await store.open(`n-${type}`, type)
    for (let i = 0; i < 3; i++) mutate(replica, random, `${type}-${i}`)
    replicas.set(type, replica)
  }
  await store.flush()
  return replicas
}

describe('atomic blocks that throw', () => {
  it('take back every change, for every type: memory exactly as before (state too, but for Yjs: value), nothing logged, nothing after a reopen', async () => {
    const { dir, remove } = await tempDir()
    try {
      const random = new Prng(7)
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const replicas = await openAll(store, random)
      const before = new Map([...replicas].map(([type, r]) => [type, { value: valueText(r), snapshot: hex(r.snapshot()), version: hex(r.version()) }]))
      const seqs = new Map([...replicas.keys()].map((type) => [type, store.committedSeq(`n-${type}`)]))
      const events: string[] = []
      store.events.on('commit', ({ name }) => events.push(name))
      const boom = new Error('boom')
      await assert.rejects(
        store.atomic(() => {
          for (const replica of replicas.values()) for (let i = 0; i < 4; i++) mutate(replica, random, `block-${i}`)
          throw boom
        }),
        (error) => error === boom,
      )
      for (const [type, replica] of replicas) {
        const was = before.get(type)!
        assert.equal(valueText(replica), was.value, `${type}: value taken back`)
        if (type !== 'yjs') {
          assert.equal(hex(replica.version()), was.version, `${type}: version taken back`)
          if (type !== 'automerge') assert.equal(hex(replica.snapshot()), was.snapshot, `${type}: state taken back`)
        }
      }
      await store.flush()
      await settle()
      assert.deepEqual(events, [], 'nothing logged')
      for (const type of replicas.keys()) assert.equal(store.committedSeq(`n-${type}`), seqs.get(type))

      // Later changes are logged as usual (the Yjs document logs its compensated structs with the next one).
      for (const replica of replicas.values()) mutate(replica, random, 'after')
      await store.flush()
      const after = new Map([...replicas].map(([type, r]) => [type, valueText(r)]))
      for (const type of replicas.keys()) assert.deepEqual((await store.verify(`n-${type}`)).problems, [], `${type}: verify`)
      await store.close()

      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      for (const type of replicas.keys()) assert.equal(valueText(await store.open(`n-${type}`, type)), after.get(type), `${type}: reopened`)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('keep changes made before the block that were not yet written (async mode), and undo only the block', async () => {
    const { dir, remove } = await tempDir()
    try {
      const store = await openStore({ dir, agentId: 'a', sweepMs: 0, durability: { mode: 'async', rpoMs: 50 } })
      const set = (await store.open('set', 'orset')) as ORSetReplica<string>
      const doc = (await store.open('doc', 'yjs')) as YjsReplica
      set.add('queued')
      typeText(doc, 'queued ')
      await assert.rejects(
        store.atomic(() => {
          set.add('block')
          set.delete('queued')
          typeText(doc, 'block')
          throw new Error('no')
        }),
      )
      assert.deepEqual(set.values(), ['queued'])
      assert.equal(textOf(doc), 'queued ')
      await store.flush()
      assert.deepEqual((await store.at('set', store.committedSeq('set'))).value(), ['queued'])
      assert.equal(textOf(await store.at('doc', store.committedSeq('doc'))), 'queued ')
      await store.close()
    } finally {
      await remove()
    }
  })
})

describe('writes the storage refuses', () => {
  it('roll every type back to what its log holds; changes queued behind the failure are refused too; the next write logs only what is kept', async () => {
    const storage = await FaultStorage.create()
    const random = new Prng(11)
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0 })
    const replicas = await openAll(store, random)
    const logged = new Map([...replicas].map(([type, r]) => [type, valueText(r)]))
    const rolledBack = new Set<string>()
    store.events.on('rolledBack', ({ name, error }) => {
      assert.ok(isConcordError(error, 'CONCORD_STORAGE_ERROR'))
      rolledBack.add(name)
    })
    storage.fault = (op) => (op === 'batch' ? new Error('EIO: injected') : undefined)
    const refused = store.atomic(() => {
      for (const replica of replicas.values()) mutate(replica, random, 'refused')
    })
    // Queued behind the failing unit: refused with it.
    for (const replica of replicas.values()) mutate(replica, random, 'queued')
    await assert.rejects(refused, hasCode('CONCORD_STORAGE_ERROR'))
    // The caller sees its names rolled back when its write rejects.
    for (const [type, replica] of replicas) assert.equal(valueText(replica), logged.get(type), `${type}: rolled back`)
    assert.equal(rolledBack.size, ALL_TYPES.length)
    storage.fault = undefined
    for (const replica of replicas.values()) mutate(replica, random, 'kept')
    await store.flush()
    for (const [type, replica] of replicas) {
      const name = `n-${type}`
      assert.deepEqual((await store.verify(name)).problems, [], `${type}: verify`)
      assert.equal(valueText(await store.at(name, store.committedSeq(name))), valueText(replica), `${type}: the log holds what memory shows`)
    }
    await store.close()
  })

  it('a refused remote commit is rolled back too, and a native replica never reuses the dots it took back', async () => {
    const storage = await FaultStorage.create()
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0 })
    const set = (await store.open('set', 'orset')) as ORSetReplica<string>
    set.add('one')
    await store.flush()
    const remote = createReplica('orset', { agentId: 'r' as never }) as ORSetReplica<string>
    remote.add('theirs')
    storage.fault = (op) => (op === 'batch' ? new Error('ENOSPC: injected') : undefined)
    set.add('mine, refused')
    await assert.rejects(store.applyRemote('set', remote.snapshot()), hasCode('CONCORD_STORAGE_ERROR'))
    await settle()
    assert.deepEqual(set.values(), ['one'])
    storage.fault = undefined
    set.add('two')
    await store.flush()
    // A peer that already held the refused element (it leaked before the failure) is told to remove it.
    const leaked = createReplica('orset', { agentId: 'p' as never }) as ORSetReplica<string>
    leaked.applyDelta((await store.at('set', 1)).snapshot())
    const probe = createReplica('orset', { agentId: 'a' as never }) as ORSetReplica<string>
    probe.add('one')
    probe.add('mine, refused')
    leaked.applyDelta(probe.deltaSince(leaked.version())!)
    assert.deepEqual([...leaked.values()].sort(), ['mine, refused', 'one'])
    leaked.applyDelta(set.deltaSince(leaked.version())!)
    assert.deepEqual([...leaked.values()].sort(), ['one', 'two'])
    assert.deepEqual((await store.verify('set')).problems, [])
    await store.close()
  })
})

describe('changes over the limit a replica loads back', () => {
  it('a 70 MiB Yjs insert is refused (CONCORD_LIMIT_EXCEEDED) and taken back; the store reopens with the earlier text', { timeout: 120_000 }, async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const doc = await store.open('doc', 'yjs')
      const errors: unknown[] = []
      store.events.on('error', ({ error }) => errors.push(error))
      typeText(doc, 'kept ')
      await store.flush()
      typeText(doc, 'x'.repeat(70 * 1024 * 1024))
      await store.flush()
      await settle()
      assert.ok(
        errors.some((e) => isConcordError(e, 'CONCORD_LIMIT_EXCEEDED')),
        'reported',
      )
      assert.equal(textOf(doc), 'kept ')
      typeText(doc, 'more')
      await store.flush()
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.equal(textOf(await store.open('doc', 'yjs')), 'kept more')
      assert.equal(store.truncations.length, 0)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('async mode: a merged Yjs unit over the limit is refused whole and taken back; what was logged before stays', async () => {
    const limited = (type: ReplicaType, options: Parameters<typeof createReplica>[1]): Replica =>
      createReplica(type, { ...options, limits: { maxBytes: 100_000 } } as never)
    const store = await openStore({ agentId: 'a', sweepMs: 0, durability: { mode: 'async', rpoMs: 20 }, createReplica: limited })
    const doc = await store.open('doc', 'yjs')
    const errors: unknown[] = []
    store.events.on('error', ({ error }) => errors.push(error))
    for (let i = 0; i < 20; i++) typeText(doc, `${i} `)
    await store.flush()
    const logged = textOf(doc)
    typeText(doc, 'z'.repeat(150_000))
    await store.flush()
    await settle()
    assert.ok(errors.some((e) => isConcordError(e, 'CONCORD_LIMIT_EXCEEDED')))
    assert.equal(textOf(doc), logged)
    typeText(doc, 'end')
    await store.flush()
    assert.equal(textOf(await store.at('doc', store.committedSeq('doc'))), `${logged}end`)
    assert.deepEqual((await store.verify('doc')).problems, [])
    await store.close()
  })

  it('an intact record over a lowered limit fails the name with CONCORD_LIMIT_EXCEEDED and is never deleted', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { onClose: false } })
      const doc = await store.open('doc', 'yjs')
      typeText(doc, 'y'.repeat(200_000))
      await store.close()
      const limited = (type: ReplicaType, options: Parameters<typeof createReplica>[1]): Replica =>
        createReplica(type, { ...options, limits: { maxBytes: 100_000 } } as never)
      store = await openStore({ dir, agentId: 'a', sweepMs: 0, createReplica: limited })
      await assert.rejects(store.open('doc', 'yjs'), hasCode('CONCORD_LIMIT_EXCEEDED'))
      assert.equal(store.truncations.length, 0)
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.equal(textOf(await store.open('doc', 'yjs')).length, 200_000)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('an Automerge change over the limit throws at once, changing nothing', async () => {
    const small = (type: ReplicaType, options: Parameters<typeof createReplica>[1]): Replica =>
      createReplica(type, { ...options, limits: { maxBytes: 10_000 } } as never)
    const store = await openStore({ agentId: 'a', sweepMs: 0, createReplica: small })
    const spec = (await store.open('spec', 'automerge')) as AutomergeReplica<{ text?: string }>
    spec.change((d) => {
      d.text = 'small'
    })
    assert.throws(
      () =>
        spec.change((d) => {
          d.text = 'z'.repeat(50_000)
        }),
      hasCode('CONCORD_LIMIT_EXCEEDED'),
    )
    assert.deepEqual(spec.value(), { text: 'small' })
    await store.flush()
    assert.equal(store.committedSeq('spec'), 1)
    await store.close()
  })
})

describe('changes after close', () => {
  it('throw CONCORD_CLOSED and change nothing (a Yjs edit is undone at once)', async () => {
    const store = await openStore({ agentId: 'a', sweepMs: 0 })
    const set = (await store.open('set', 'orset')) as ORSetReplica<string>
    const spec = (await store.open('spec', 'automerge')) as AutomergeReplica<{ a?: number }>
    const doc = await store.open('doc', 'yjs')
    set.add('before')
    spec.change((d) => {
      d.a = 1
    })
    typeText(doc, 'before')
    await store.close()
    assert.throws(() => set.add('after'), hasCode('CONCORD_CLOSED'))
    assert.throws(() => set.delete('before'), hasCode('CONCORD_CLOSED'))
    assert.throws(
      () =>
        spec.change((d) => {
          d.a = 2
        }),
      hasCode('CONCORD_CLOSED'),
    )
    typeText(doc, 'after')
    assert.deepEqual(set.values(), ['before'])
    assert.deepEqual(spec.value(), { a: 1 })
    assert.equal(textOf(doc), 'before')
  })

  it('a replica of an expired, archived or deleted name refuses changes too', async () => {
    const { dir, remove } = await tempDir()
    try {
      const store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const set = (await store.open('set', 'orset')) as ORSetReplica<string>
      set.add('x')
      await store.flush()
      await store.delete('set')
      assert.throws(() => set.add('y'), hasCode('CONCORD_CLOSED'))
      const reopened = (await store.open('set', 'orset')) as ORSetReplica<string>
      reopened.add('z')
      assert.deepEqual(reopened.values(), ['z'])
      await store.close()
    } finally {
      await remove()
    }
  })
})
