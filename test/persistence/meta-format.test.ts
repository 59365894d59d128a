/**
 * Name metadata format 4 (issue 19, disk; persistence/format/name-meta.ts):
 * no stored name (the checksum covers the key's), `touched` relative to
 * `created`, the digest's seq only when it is not `lastSeq`. Every field
 * round-trips; a value read under another key, damaged or from newer code
 * fails with a typed error; folders whose metadata is format 2 or 3 open,
 * list, answer digests without hydrating and verify unchanged, and a name
 * is rewritten as format 4 only when its metadata is written anyway.
 */
import assert from 'node:assert/strict'
import { cp } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import { metaKey } from '../../persistence/format/keys.ts'
import { decodeMeta, encodeLegacyMeta, encodeMeta, type NameMeta, newMeta } from '../../persistence/format/name-meta.ts'
import { openStore } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import { tempDir, textOf, typeText } from './helpers.ts'

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code

const samples: NameMeta[] = [
  newMeta('doc-000001', 'yjs', 0, 1_764_000_000_000),
  {
    ...newMeta('notes/ü/2', 'automerge', 3, 1_764_000_000_000, 60_000),
    touched: 1_764_000_123_456,
    lastSeq: 300,
    lastHash: new Uint8Array(32).fill(9),
    firstSeq: 41,
    logBytes: 12_345,
    checkpoints: [
      { seq: 40, size: 900 },
      { seq: 200, size: 1200 },
    ],
    digest: { seq: 300, bytes: new Uint8Array(16).fill(3) },
  },
  // A digest of an earlier record (stale), and a clock that went back (touched before created).
  {
    ...newMeta('n', 'pncounter', 0, 5000),
    touched: 4000,
    lastSeq: 7,
    lastHash: new Uint8Array(32).fill(1),
    digest: { seq: 5, bytes: new Uint8Array(16).fill(2) },
  },
]

describe('name metadata format 4', () => {
  it('round-trips every field without storing the name; format 3 still decodes to the same metadata', () => {
    for (const meta of samples) {
      const bytes = encodeMeta(meta)
      assert.equal(bytes[0], 4)
      assert.deepEqual(decodeMeta(bytes, meta.name), meta, meta.name)
      if (meta.name.length > 3) assert.equal(Buffer.from(bytes).indexOf(Buffer.from(meta.name)), -1, 'the name is not stored')
      const legacy = encodeLegacyMeta(meta)
      assert.equal(legacy[0], 3)
      assert.deepEqual(decodeMeta(legacy, 'the key of a format 3 value is not read'), meta, `${meta.name} (format 3)`)
      assert.ok(bytes.length < legacy.length, `${meta.name}: ${bytes.length} < ${legacy.length} bytes`)
    }
  })

  it('a value read under another key, damaged, truncated or from newer code fails with a typed error', () => {
    const bytes = encodeMeta(samples[1])
    assert.throws(() => decodeMeta(bytes, 'notes/ü/3'), hasCode('CONCORD_CORRUPT_RECORD'))
    for (let at = 0; at < bytes.length; at++) {
      const damaged = bytes.slice()
      damaged[at] ^= 0x10
      assert.throws(
        () => decodeMeta(damaged, samples[1].name),
        (error: unknown) => isConcordError(error),
        `byte ${at}`,
      )
    }
    for (let length = 0; length < bytes.length; length++) {
      assert.throws(() => decodeMeta(bytes.subarray(0, length), samples[1].name), hasCode('CONCORD_CORRUPT_RECORD'), `${length} bytes`)
    }
    const newer = bytes.slice()
    newer[0] = 5
    assert.throws(() => decodeMeta(newer, samples[1].name), hasCode('CONCORD_UNSUPPORTED_VERSION'))
  })

  it('a folder of format 3 metadata (test/data/store-before-derived-chain) lists, opens and verifies unchanged; a written name becomes format 4', async () => {
    const { dir, remove } = await tempDir()
    try {
      await cp(new URL('../data/store-before-derived-chain', import.meta.url).pathname, dir, { recursive: true })
      let store = await openStore({ dir, agentId: 'fixture-writer', sweepMs: 0 })
      const listed = (await store.listNames()).map((n) => [n.name, n.type])
      assert.deepEqual(listed, [
        ['hits', 'gcounter'],
        ['inbox', 'yjs'],
        ['notes', 'yjs'],
      ])
      for (const [name] of listed) assert.deepEqual((await store.verify(name)).problems, [], name)
      const notes = await store.open('notes', 'yjs')
      typeText(notes, '!')
      await store.flush()
      await store.close()
      const versions = async () => {
        const storage = await openLevelStorage({ dir })
        try {
          return Object.fromEntries(await Promise.all(listed.map(async ([name]) => [name, (await storage.get(metaKey(name)))![0]])))
        } finally {
          await storage.close()
        }
      }
      const after = await versions()
      assert.equal(after.notes, 4, 'the written name')
      assert.equal(after.inbox, 3, 'a name only listed and verified is not rewritten')
      store = await openStore({ dir, agentId: 'fixture-writer', sweepMs: 0 })
      for (const [name] of listed) assert.deepEqual((await store.verify(name)).problems, [], `${name} after the reopen`)
      assert.equal(textOf(await store.open('notes', 'yjs')), 'plan then act check done!!')
      assert.equal(((await store.open('hits', 'gcounter')) as GCounterReplica).value(), 6)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a folder whose metadata is format 3 with digests and checkpoints reads the same metadata, digests and values as format 4', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 3 } })
      for (let i = 0; i < 6; i++) {
        const counter = (await store.open(`c${i}`, 'gcounter')) as GCounterReplica
        for (let k = 0; k <= i; k++) await store.atomic(() => counter.increment(1))
        typeText(await store.open(`t${i}`, 'yjs'), `text ${i}`)
      }
      await store.flush()
      await store.listNames()
      const digests = new Map<string, string>()
      for (let i = 0; i < 6; i++) for (const name of [`c${i}`, `t${i}`]) digests.set(name, Buffer.from(store.digestOf(name) ?? []).toString('hex'))
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const listed = await store.listNames()
      await store.close()

      // Every metadata value rewritten as format 3, as code before issue 19 wrote it.
      const storage = await openLevelStorage({ dir })
      try {
        const ops = []
        for await (const entry of storage.iterate({ prefix: ['m'] })) {
          const meta = decodeMeta(entry.value, entry.key[1])
          assert.equal(entry.value[0], 4)
          ops.push({ type: 'put' as const, key: entry.key, value: encodeLegacyMeta(meta) })
        }
        assert.equal(ops.length, 12)
        assert.ok(
          ops.some((op) => decodeMeta(op.value, op.key[1]).checkpoints.length > 0),
          'some name has checkpoints',
        )
        await storage.batch(ops, { sync: true })
      } finally {
        await storage.close()
      }

      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.deepEqual(await store.listNames(), listed)
      const before = store.hydrations
      for (const [name, digest] of digests) assert.equal(Buffer.from(store.digestOf(name) ?? []).toString('hex'), digest, name)
      assert.equal(store.hydrations, before, 'digests read from format 3 metadata, nothing hydrated')
      for (let i = 0; i < 6; i++) {
        assert.deepEqual((await store.verify(`c${i}`)).problems, [])
        assert.equal(((await store.open(`c${i}`, 'gcounter')) as GCounterReplica).value(), i + 1)
        assert.equal(textOf(await store.open(`t${i}`, 'yjs')), `text ${i}`)
      }
      await store.close()
    } finally {
      await remove()
    }
  })
})
