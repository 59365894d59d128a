/**
 * Log record format 4 (issue 19, disk): no stored name, seq or previous
 * hash; the checksum covers the key's name and seq, the hash is derived
 * from the previous record's. A folder of formats 1 to 3
 * (test/data/store-before-derived-chain, written by main at b7bb390: a
 * Yjs name of plain, provenance and signed records with a checkpoint, a
 * counter, a name a remote commit created) opens,
 * verifies, keeps its hashes, and takes format 4 records on its chain.
 */
import assert from 'node:assert/strict'
import { cp } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import { sha256, ZERO_HASH } from '../../persistence/format/checksum.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { decodeRecord, encodeHashedRecord, encodeLegacyRecord, encodeRecord, type LogRecord, recordHash, UNCHAINED } from '../../persistence/format/record.ts'
import { openStore } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import { tempDir, textOf, typeText } from './helpers.ts'

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

/** The hashes main at b7bb390 reported for the fixture's records (`history`). */
const FIXTURE_HASHES: Record<string, string[]> = {
  notes: [
    '1bf44335843f7dbe3bea99d21b3956f540957f5517f6a04e3648458e1cb99207',
    'f82bd7c069680d0fe9d15865c8699257e3bc944a14d6b638fd4b1b5c360d3a77',
    '4236ee5f9c838356ccb03a9ada663bc573f303e47fbde67017f74ea6996814ae',
    'e72e8c6d48302e7c96c6369e0d966f37dbce348a0bbcaf63d44ba7698820cc11',
    'ddeb80d45d200049f1dd822dcadd311f76c225a8279a41d71fe98cf41a02c671',
    'd0c944e6f4276d427a9c2305ce1f7a490e66f5a75ceac1b85e85d30eeaf9b5dc',
  ],
  hits: [
    '95b7704537b6221cf6e6afaa6cd003f6d271dafdcc390ac3e2889cba7b03d057',
    'e834194c6dec3f77f69b18c645bc7575f7d7fac9918f84f6411f55c0ec5da857',
    '7bbe0bff2b407b273bc8e688a6f520a8e5676653142583e12502f5272d4cdc1e',
  ],
  inbox: ['02a7acaf7e755b34769c8ee20ec79c75e5bae4499d48d2b110152115949d9054'],
}

const base: LogRecord = {
  name: 'notes/a',
  seq: 9,
  hlc: { wall: 1_700_000_000_123, logical: 2 },
  agent: 'alice',
  kind: 'delta',
  prevHash: new Uint8Array(32).fill(5),
  delta: Uint8Array.of(1, 2, 3, 4),
}

describe('record format 4', () => {
  it('round-trips every field, stores no name, seq or previous hash, and derives the hash from the previous one', () => {
    const full: LogRecord = {
      ...base,
      kind: 'state',
      message: 'why',
      metaJson: '{"tool":"t"}',
      authored: { wall: 1_600_000_000_000, logical: 1 },
      signature: { signature: new Uint8Array(64).fill(9), publicKey: new Uint8Array(32).fill(8) },
    }
    for (const record of [base, full]) {
      const bytes = encodeRecord(record)
      assert.equal(bytes[0], 4)
      const place = { name: record.name, seq: record.seq, prevHash: record.prevHash }
      const decoded = decodeRecord(bytes, place)
      const { prevHash, ...expected } = record
      for (const [key, value] of Object.entries(expected)) assert.deepEqual(decoded[key as keyof typeof decoded], value, key)
      assert.deepEqual(decoded.prevHash, prevHash)
      assert.equal(decoded.size, bytes.length)
      assert.deepEqual(decoded.hash, recordHash(bytes, record.name, record.seq, record.prevHash))
      // Encoded and hashed in one buffer: the same bytes and hash.
      const hashed = encodeHashedRecord(record)
      assert.deepEqual(hashed.bytes, bytes)
      assert.deepEqual(hashed.hash, decoded.hash)
      // The hash depends on the previous one; read out of the chain it is UNCHAINED.
      assert.notDeepEqual(decodeRecord(bytes, { ...place, prevHash: ZERO_HASH }).hash, decoded.hash)
      assert.equal(decodeRecord(bytes, { name: record.name, seq: record.seq }).hash, UNCHAINED)
      assert.ok(!Buffer.from(bytes).includes(Buffer.from(record.name)), 'the name is the key’s')
    }
    // 32 bytes of previous hash, the name and the seq are gone against format 1.
    const legacy = encodeLegacyRecord(base)
    assert.equal(legacy.length - encodeRecord(base).length, 32 + 1 + base.name.length + 1 - 1)
    assert.deepEqual(decodeRecord(legacy).hash, sha256(legacy))
  })

  it('every flipped bit, a cut and a record under another key fail with CONCORD_CORRUPT_RECORD', () => {
    const bytes = encodeRecord({ ...base, message: 'm' })
    const place = { name: base.name, seq: base.seq, prevHash: base.prevHash }
    for (let bit = 0; bit < bytes.length * 8; bit++) {
      const flipped = bytes.slice()
      flipped[bit >> 3] ^= 1 << (bit & 7)
      // Bits of the version byte can make it a newer (refused) or an older format (then damaged).
      assert.throws(
        () => decodeRecord(flipped, place),
        (error: unknown) => hasCode('CONCORD_CORRUPT_RECORD')(error) || (bit < 8 && hasCode('CONCORD_UNSUPPORTED_VERSION')(error)),
        `bit ${bit}`,
      )
    }
    for (let cut = 0; cut < bytes.length; cut++) assert.throws(() => decodeRecord(bytes.subarray(0, cut), place), hasCode('CONCORD_CORRUPT_RECORD'))
    assert.throws(() => decodeRecord(bytes, { ...place, seq: base.seq + 1 }), hasCode('CONCORD_CORRUPT_RECORD'))
    assert.throws(() => decodeRecord(bytes, { ...place, name: 'notes/b' }), hasCode('CONCORD_CORRUPT_RECORD'))
    assert.throws(() => decodeRecord(bytes), hasCode('CONCORD_CORRUPT_RECORD'))
  })

  it('a folder of formats 1 to 3 opens and verifies with its hashes, and takes format 4 records on the same chain', async () => {
    const { dir, remove } = await tempDir()
    try {
      await cp(new URL('../data/store-before-derived-chain', import.meta.url).pathname, dir, { recursive: true })
      let store = await openStore({ dir, agentId: 'fixture-writer', sweepMs: 0 })
      for (const [name, hashes] of Object.entries(FIXTURE_HASHES)) {
        assert.deepEqual((await store.verify(name)).problems, [], name)
        assert.deepEqual(
          (await store.history(name)).map((h) => h.hash),
          hashes,
          name,
        )
      }
      assert.equal(textOf(await store.open('notes', 'yjs')), 'plan then act check done!')
      assert.equal(((await store.open('hits', 'gcounter')) as GCounterReplica).value(), 6)
      const notes = await store.open('notes', 'yjs')
      await store.atomic(() => typeText(notes, ' more'), { agent: 'carol', message: 'new format' })
      typeText(notes, '.')
      await store.flush()
      await store.close()

      store = await openStore({ dir, agentId: 'fixture-writer', sweepMs: 0 })
      assert.deepEqual((await store.verify('notes')).problems, [])
      const history = await store.history('notes')
      assert.deepEqual(
        history.slice(0, 6).map((h) => h.hash),
        FIXTURE_HASHES.notes,
      )
      assert.equal(history.length, 8)
      const storage = store.storage
      let prev = ZERO_HASH
      for (const entry of history) {
        const value = (await storage.get(logKey('notes', entry.seq)))!
        assert.equal(value[0] === 4, entry.seq > 6, `record ${entry.seq}'s format`)
        prev = recordHash(value, 'notes', entry.seq, prev)
        assert.equal(entry.hash, hex(prev), `record ${entry.seq}'s hash`)
      }
      // Pages from the end or the middle hash from the chain too.
      assert.deepEqual(
        (await store.history('notes', { reverse: true, limit: 1 })).map((h) => [h.seq, h.hash]),
        [[8, history[7].hash]],
      )
      assert.deepEqual(
        (await store.historyPage('notes', { from: 8, limit: 1 })).entries.map((h) => h.hash),
        [history[7].hash],
      )
      assert.equal(textOf(await store.open('notes', 'yjs')), 'plan then act check done! more.')
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a torn last record is truncated and the next record chains to the one before it', async () => {
    const { dir, remove } = await tempDir()
    try {
      // One record per change (mergeLocal 'async'): three records, the last one torn.
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0, mergeLocal: 'async' })
      const doc = await store.open('doc', 'yjs')
      for (const word of ['one ', 'two ', 'three ']) typeText(doc, word)
      await store.flush()
      await store.close()
      const storage = await openLevelStorage({ dir })
      try {
        const last = (await storage.get(logKey('doc', 3)))!
        await storage.batch([{ type: 'put', key: logKey('doc', 3), value: last.subarray(0, last.length - 3) }], { sync: true })
      } finally {
        await storage.close()
      }
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      const reopened = await store.open('doc', 'yjs')
      assert.equal(textOf(reopened), 'one two ')
      assert.deepEqual(
        store.truncations.map((t) => [t.name, t.fromSeq]),
        [['doc', 3]],
      )
      typeText(reopened, 'again')
      await store.flush()
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.deepEqual((await store.verify('doc')).problems, [])
      assert.equal(textOf(await store.open('doc', 'yjs')), 'one two again')
      const history = await store.history('doc')
      assert.equal(history.length, 3)
      let prev = ZERO_HASH
      for (const entry of history) {
        prev = recordHash((await store.storage.get(logKey('doc', entry.seq)))!, 'doc', entry.seq, prev)
        assert.equal(entry.hash, hex(prev))
      }
      await store.close()
    } finally {
      await remove()
    }
  })
})
