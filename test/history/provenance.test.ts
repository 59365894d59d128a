/**
 * Provenance in records (issue 16): author, message and meta of a change
 * are kept in every record of it (record format 2), a record without them
 * stays format 1, and a folder written before format 2 opens and verifies
 * unchanged (test/data/store-before-provenance, written by main at 6233fb5).
 */
import assert from 'node:assert/strict'
import { cp } from 'node:fs/promises'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { isConcordError } from '../../crdt/errors.ts'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { decodeRecord, encodeLegacyRecord, encodeRecord } from '../../persistence/format/record.ts'
import { openStore } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import { tempDir, textOf, typeText } from '../persistence/helpers.ts'

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code

describe('provenance in records', () => {
  it('keeps agent, message and meta of a change through a restart; every record is format 4 (provenance flagged)', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'host', sweepMs: 0 })
      const doc = await store.open('doc', 'yjs')
      const hits = (await store.open('hits', 'gcounter')) as GCounterReplica
      await store.atomic(
        () => {
          typeText(doc, 'plan')
          hits.increment(1)
        },
        { agent: 'alice', message: 'first draft', meta: { tool: 'editor', session: 's1', causedBy: ['x:1'] } },
      )
      await store.atomic(() => typeText(doc, '!'))
      const side = new Y.Doc()
      side.getText('t').insert(0, '?')
      await store.commit([{ name: 'doc', delta: Y.encodeStateAsUpdate(side) }], { agent: 'bob', message: 'a question' })
      await store.close()
      store = await openStore({ dir, agentId: 'host', sweepMs: 0 })
      const history = await store.history('doc')
      assert.deepEqual(
        history.map((h) => [h.seq, h.agent, h.message, h.meta]),
        [
          [1, 'alice', 'first draft', { causedBy: ['x:1'], session: 's1', tool: 'editor' }],
          [2, 'host', undefined, undefined],
          [3, 'bob', 'a question', undefined],
        ],
      )
      assert.deepEqual(
        (await store.history('hits')).map((h) => [h.agent, h.message]),
        [['alice', 'first draft']],
      )
      assert.equal(textOf(await store.open('doc', 'yjs')).length, 6)
      assert.deepEqual((await store.verify('doc')).problems, [])
      await store.close()
      const storage = await openLevelStorage({ dir })
      try {
        const versions = []
        for (let seq = 1; seq <= 3; seq++) versions.push((await storage.get(logKey('doc', seq)))![0])
        assert.deepEqual(versions, [4, 4, 4])
      } finally {
        await storage.close()
      }
    } finally {
      await remove()
    }
  })

  it('refuses provenance out of bounds before anything changes', async () => {
    const store = await openStore({ agentId: 'host', sweepMs: 0 })
    try {
      const doc = await store.open('doc', 'yjs')
      for (const bad of [
        { agent: '' },
        { message: 'x'.repeat(4097) },
        { meta: [] as unknown as Record<string, unknown> },
        { meta: { big: 'x'.repeat(17_000) } },
      ]) {
        await assert.rejects(
          store.atomic(() => typeText(doc, 'no'), bad),
          hasCode('CONCORD_INVALID_ARGUMENT'),
        )
      }
      assert.equal(textOf(doc), '')
      assert.equal(store.committedSeq('doc'), 0)
    } finally {
      await store.close()
    }
  })

  it('the record codec round-trips message and meta, and refuses unknown flags', () => {
    const base = {
      name: 'n',
      seq: 1,
      hlc: { wall: 5, logical: 1 },
      agent: 'a',
      kind: 'delta' as const,
      prevHash: new Uint8Array(32),
      delta: Uint8Array.of(1, 2),
    }
    const place = { name: 'n', seq: 1, prevHash: new Uint8Array(32) }
    const withBoth = decodeRecord(encodeRecord({ ...base, message: 'why', metaJson: '{"tool":"t"}' }), place)
    assert.equal(withBoth.message, 'why')
    assert.equal(withBoth.metaJson, '{"tool":"t"}')
    const authored = decodeRecord(encodeRecord({ ...base, authored: { wall: 1_700_000_000_000, logical: 3 } }), place)
    assert.deepEqual(authored.authored, { wall: 1_700_000_000_000, logical: 3 })
    assert.equal(authored.message, undefined)
    const onlyMeta = decodeRecord(encodeRecord({ ...base, metaJson: '{}' }), place)
    assert.equal(onlyMeta.message, undefined)
    assert.equal(onlyMeta.metaJson, '{}')
    const plain = encodeRecord(base)
    assert.equal(plain[0], 4)
    assert.equal(decodeRecord(plain, place).message, undefined)
    // The format before version 4 still decodes (a record without provenance was version 1).
    const legacy = encodeLegacyRecord(base)
    assert.equal(legacy[0], 1)
    assert.deepEqual(decodeRecord(legacy).delta, base.delta)
  })

  it('a folder written before record format 2 opens, verifies, and takes new records with provenance', async () => {
    const { dir, remove } = await tempDir()
    try {
      await cp(new URL('../data/store-before-provenance', import.meta.url).pathname, dir, { recursive: true })
      let store = await openStore({ dir, agentId: 'fixture-writer', sweepMs: 0 })
      assert.deepEqual(
        (await store.names()).map((n) => [n.name, n.type, n.lastSeq]),
        [
          ['facts', 'ormap', 2],
          ['hits', 'gcounter', 3],
          ['notes', 'yjs', 6],
        ],
      )
      for (const name of ['facts', 'hits', 'notes']) assert.deepEqual((await store.verify(name)).problems, [], name)
      assert.equal(textOf(await store.open('notes', 'yjs')), 'then act check done')
      assert.equal((await store.open('hits', 'gcounter')).value(), 6)
      assert.deepEqual((await store.open('facts', 'ormap')).value(), { owner: 'ana', status: 'open' })
      assert.deepEqual(
        (await store.history('notes')).map((h) => [h.agent, h.message]),
        [
          ['alice', undefined],
          ['alice', undefined],
          ['alice', undefined],
          ['alice', undefined],
          ['alice', undefined],
          ['bob', undefined],
        ],
      )
      assert.equal(textOf(await store.at('notes', 1)), 'plan ')
      const notes = await store.open('notes', 'yjs')
      await store.atomic(() => typeText(notes, '.'), { agent: 'carol', message: 'full stop' })
      await store.close()
      store = await openStore({ dir, agentId: 'fixture-writer', sweepMs: 0 })
      assert.deepEqual((await store.verify('notes')).problems, [])
      const last = (await store.history('notes', { reverse: true, limit: 1 }))[0]
      assert.deepEqual([last.seq, last.agent, last.message], [7, 'carol', 'full stop'])
      await store.close()
    } finally {
      await remove()
    }
  })
})
