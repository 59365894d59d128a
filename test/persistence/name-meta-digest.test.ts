/**
 * Name metadata formats 3 and 4 (persistence/format/name-meta.ts): the state
 * digest round-trips; formats 1 and 2 (no digest) still decode; a store
 * writes the digest with metadata it stores once a name is idle, and reads
 * it back without hydrating the name; a name changed after it left the
 * cache (its replica still held) is not answered with its older digest.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Encoder } from '../../crdt/codec.ts'
import { sealWithChecksum, ZERO_HASH } from '../../persistence/format/checksum.ts'
import { currentDigest, decodeMeta, encodeMeta, newMeta } from '../../persistence/format/name-meta.ts'
import { openStore } from '../../persistence/index.ts'
import { metaKey } from '../../persistence/format/keys.ts'
import type { Storage } from '../../persistence/storage/storage.ts'
import { replicaDigest } from '../../crdt/state-digest.ts'
import { tempDir } from '../helpers/temp-dir.ts'

const run = promisify(execFile)
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

test('metadata format 4 carries the state digest; formats 2 and 1 decode without one', () => {
  const meta = { ...newMeta('task/1', 'pncounter', 0, 1000), lastSeq: 4, digest: { seq: 4, bytes: new Uint8Array(16).fill(7) } }
  const decoded = decodeMeta(encodeMeta(meta), 'task/1')
  assert.deepEqual(decoded.digest, meta.digest)
  assert.deepEqual(currentDigest(decoded), meta.digest.bytes)
  assert.equal(currentDigest({ ...decoded, lastSeq: 5 }), undefined, 'a digest of an older record is stale')
  for (const version of [1, 2]) {
    // The layout of formats 1 and 2: everything of format 3 before the digest flag.
    const body = new Encoder(64)
      .writeUint8(version)
      .writeString('task/1')
      .writeString('pncounter')
      .writeVarUint(0)
      .writeVarUint(1000)
      .writeVarUint(1000)
      .writeVarUint(4)
      .writeRaw(ZERO_HASH)
      .writeVarUint(1)
      .writeVarUint(0)
      .writeVarUint(0)
      .writeVarUint(0)
      .finish()
    const old = decodeMeta(sealWithChecksum(body), 'task/1')
    assert.equal(old.lastSeq, 4)
    assert.equal(old.digest, undefined)
    assert.equal(currentDigest(old), undefined)
  }
})

test('a store keeps the digest in the metadata of idle names and reads it without hydrating them, across a reopen', async () => {
  const dir = await tempDir('concord-meta-digest-')
  try {
    let store = await openStore({ dir: dir.path, cacheSize: 4, agentId: 'a', sweepMs: 0 })
    const digests = new Map<string, Uint8Array>()
    for (let i = 0; i < 20; i++) {
      const counter = (await store.open(`n${i}`, 'pncounter')) as unknown as { increment(by?: number): void }
      counter.increment(i + 1)
    }
    await store.flush()
    await store.listNames()
    for (let i = 0; i < 20; i++) {
      const digest = store.digestOf(`n${i}`)
      assert.ok(digest, `n${i} has a digest`)
      digests.set(`n${i}`, digest)
    }
    await store.close()
    store = await openStore({ dir: dir.path, cacheSize: 4, agentId: 'a', sweepMs: 0 })
    await store.listNames()
    const before = store.hydrations
    for (let i = 0; i < 20; i++) assert.deepEqual(store.digestOf(`n${i}`), digests.get(`n${i}`), `n${i} after reopening`)
    assert.equal(store.hydrations, before, 'reading digests hydrated nothing')
    await store.close()
  } finally {
    await dir.remove()
  }
})

test('a replica changed after its name left the cache (the application still held it): once it is collected, the store does not answer the digest of the state it had when it left', async () => {
  const dir = await tempDir('concord-digest-evicted-')
  try {
    const { stdout } = await run(process.execPath, ['--expose-gc', '--import', 'tsx', 'test/persistence/fixtures/digest-after-eviction.ts', dir.path])
    const got = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>
    assert.equal(got.left, true, "'held' left the cache")
    assert.equal(got.collected, true, 'the replica was collected')
    assert.equal(got.value, 3)
    assert.ok(got.before)
    assert.notEqual(got.answered, got.before, 'not the digest of the state it had when it left the cache')
    if (got.answered !== null) assert.equal(got.answered, got.truth)
  } finally {
    await dir.remove()
  }
})

test("a new name's digest (its type's empty state, computed once per type) is the digest of its replica, and follows its first change", async () => {
  const dir = await tempDir('concord-meta-digest-new-')
  try {
    const store = await openStore({ dir: dir.path, agentId: 'a', sweepMs: 0 })
    const asked = (['pncounter', 'orset', 'yjs', 'automerge'] as const).flatMap((type) => [1, 2].map((i) => ({ name: `${type}/${i}`, type }) as const))
    const replicas = await store.openMany(asked)
    const storage = (store as unknown as { context: { storage: Storage } }).context.storage
    for (const [i, { name }] of asked.entries()) {
      const meta = decodeMeta((await storage.get(metaKey(name)))!, name)
      assert.deepEqual(meta.digest?.bytes, replicaDigest(name, replicas[i]), `${name}: stored with its empty state's digest`)
    }
    const counter = replicas[0] as unknown as { increment(by?: number): void }
    counter.increment()
    await store.flush()
    const meta = decodeMeta((await storage.get(metaKey('pncounter/1')))!, 'pncounter/1')
    assert.equal(meta.lastSeq, 1)
    assert.deepEqual(meta.digest?.bytes, replicaDigest('pncounter/1', replicas[0]), 'after its first change, the changed state')
    await store.close()
  } finally {
    await dir.remove()
  }
})
