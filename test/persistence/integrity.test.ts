/**
 * Corruption written through the storage layer into a real LevelDB folder:
 * cut-short and bit-flipped records (the newest ones: a torn tail, truncated
 * and reported; one in the middle: CONCORD_CORRUPT_RECORD for that name only),
 * damaged checkpoints and metadata, and a folder whose newest LevelDB .log
 * file is truncated.
 */
import assert from 'node:assert/strict'
import { readdirSync, statSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import { checkpointKey, logKey, metaKey } from '../../persistence/format/keys.ts'
import { decodeRecord, encodeRecord } from '../../persistence/format/record.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { openStore, type StoreOptions } from '../../persistence/index.ts'
import { tempDir, textOf, typeText } from './helpers.ts'

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code
const options = (dir: string): StoreOptions => ({
  dir,
  agentId: 'a',
  sweepMs: 0,
  retention: 'full',
  checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false },
})
const letters = (n: number): string => 'abcdefghijklmnopqrstuvwxyz'.slice(0, n)

/** A folder with 'victim' (10 one-letter records) and 'other' (5). */
async function seeded(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const temp = await tempDir('concord-corrupt-')
  const store = await openStore(options(temp.dir))
  const victim = await store.open('victim', 'yjs')
  const other = await store.open('other', 'yjs')
  for (let i = 0; i < 10; i++) {
    typeText(victim, letters(26)[i])
    await store.flush()
  }
  for (let i = 0; i < 5; i++) {
    typeText(other, letters(26)[i])
    await store.flush()
  }
  await store.close()
  return temp
}

/** Rewrites values directly through the storage layer. */
async function tamper(dir: string, edit: Array<{ key: readonly string[]; change: (value: Uint8Array) => Uint8Array | undefined }>): Promise<void> {
  const storage = await openLevelStorage({ dir })
  for (const { key, change } of edit) {
    const value = await storage.get(key)
    assert.ok(value, `no value under ${key.join('/')}`)
    const next = change(value.slice())
    await storage.batch([next === undefined ? { type: 'del', key } : { type: 'put', key, value: next }], { sync: true })
  }
  await storage.close()
}

const cutShort = (value: Uint8Array): Uint8Array => value.slice(0, value.length - 7)
const flipBit =
  (at: number) =>
  (value: Uint8Array): Uint8Array => {
    value[Math.min(at, value.length - 1)] ^= 0x10
    return value
  }

describe('integrity', () => {
  for (const [label, damage] of [
    ['cut short', cutShort],
    ['bit-flipped', flipBit(20)],
  ] as const) {
    it(`newest records ${label}: a torn tail, truncated and reported; the rest intact`, async () => {
      const { dir, remove } = await seeded()
      try {
        await tamper(dir, [
          { key: logKey('victim', 9), change: damage },
          { key: logKey('victim', 10), change: damage },
        ])
        let store = await openStore(options(dir))
        const victim = await store.open('victim', 'yjs')
        assert.equal(textOf(victim), letters(8))
        assert.deepEqual(
          store.truncations.map((t) => [t.name, t.fromSeq, t.toSeq]),
          [['victim', 9, 10]],
        )
        assert.equal(textOf(await store.open('other', 'yjs')), letters(5))
        assert.equal(store.committedSeq('victim'), 8)
        typeText(victim, 'Z')
        await store.flush()
        assert.equal(store.committedSeq('victim'), 9)
        assert.deepEqual((await store.verify('victim')).problems, [])
        await store.close()
        store = await openStore(options(dir))
        assert.equal(textOf(await store.open('victim', 'yjs')), `${letters(8)}Z`)
        assert.equal(store.truncations.length, 0)
        await store.close()
      } finally {
        await remove()
      }
    })

    it(`a record in the middle ${label}: CONCORD_CORRUPT_RECORD for that name only`, async () => {
      const { dir, remove } = await seeded()
      try {
        await tamper(dir, [{ key: logKey('victim', 5), change: damage }])
        const store = await openStore(options(dir))
        await assert.rejects(store.open('victim', 'yjs'), hasCode('CONCORD_CORRUPT_RECORD'))
        await assert.rejects(store.history('victim'), hasCode('CONCORD_CORRUPT_RECORD'))
        await assert.rejects(store.at('victim', 7), hasCode('CONCORD_CORRUPT_RECORD'))
        assert.equal(textOf(await store.at('victim', 4)), letters(4))
        const report = await store.verify('victim')
        assert.equal(report.ok, false)
        assert.match(report.problems.join(), /record 5/)
        assert.equal(textOf(await store.open('other', 'yjs')), letters(5))
        assert.equal(store.truncations.length, 0)
        await store.close()
      } finally {
        await remove()
      }
    })
  }

  it('a missing record in the middle or a broken hash chain fails the name', async () => {
    const { dir, remove } = await seeded()
    try {
      await tamper(dir, [{ key: logKey('victim', 4), change: () => undefined }])
      // Re-encode record 3 of 'other' with a valid checksum but another time (a forged record): its hash, and so the chain
      // the metadata's lastHash anchors, changes (a version 4 record stores no link of its own: persistence/format/record.ts).
      await tamper(dir, [
        {
          key: logKey('other', 3),
          change: (value) => {
            const record = decodeRecord(value, { name: 'other', seq: 3 })
            return encodeRecord({ ...record, hlc: { ...record.hlc, logical: record.hlc.logical + 1 } })
          },
        },
      ])
      const store = await openStore(options(dir))
      await assert.rejects(store.open('victim', 'yjs'), hasCode('CONCORD_CORRUPT_RECORD'))
      await assert.rejects(store.open('other', 'yjs'), /breaks the hash chain/)
      assert.match((await store.verify('other')).problems.join(), /hash chain/)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a damaged checkpoint falls back to an older one (or the log); damaged metadata fails only its name', async () => {
    const { dir, remove } = await seeded()
    try {
      let store = await openStore(options(dir))
      await store.open('victim', 'yjs')
      assert.equal(await store.checkpoint('victim'), 10)
      await store.close()
      await tamper(dir, [
        { key: checkpointKey('victim', 10), change: flipBit(30) },
        { key: metaKey('other'), change: flipBit(3) },
      ])
      store = await openStore(options(dir))
      assert.equal(textOf(await store.open('victim', 'yjs')), letters(10))
      assert.match((await store.verify('victim')).problems.join(), /checkpoint 10/)
      await assert.rejects(store.open('other', 'yjs'), hasCode('CONCORD_CORRUPT_RECORD'))
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a folder whose newest LevelDB .log file is truncated opens; every name is an intact prefix, and what was lost is reported', async () => {
    const { dir, remove } = await tempDir('concord-corrupt-')
    try {
      let store = await openStore(options(dir))
      await store.open('x', 'yjs')
      await store.close()
      // A second session: its writes live in the newest .log file.
      store = await openStore(options(dir))
      const names = ['x', 'y', 'z']
      const replicas = await Promise.all(names.map((name) => store.open(name, 'yjs')))
      for (let i = 0; i < 40; i++) {
        replicas.forEach((replica) => typeText(replica, letters(26)[i % 26]))
        await store.flush()
      }
      await store.close()
      const logs = readdirSync(dir)
        .filter((file) => file.endsWith('.log') && file !== 'LOG')
        .sort()
      const newest = join(dir, logs.at(-1)!)
      const size = statSync(newest).size
      assert.ok(size > 1000, `the newest log holds the session (${size} bytes)`)
      truncateSync(newest, Math.floor(size * 0.6))
      store = await openStore(options(dir))
      for (const name of names) {
        const replica = await store.open(name, 'yjs')
        const last = store.committedSeq(name)
        const expected = Array.from({ length: last }, (_, i) => letters(26)[i % 26]).join('')
        assert.equal(textOf(replica), expected)
        assert.ok(last < 40, `${name}: nothing was lost? (${last})`)
        // The records lost since the clean close are found (persistence/lifecycle/seal.ts) and fail verify.
        assert.deepEqual(store.losses.find((loss) => loss.name === name)?.toSeq, 40, `${name}: loss reported`)
        assert.match((await store.verify(name)).problems.join('\n'), new RegExp(`records ${last + 1}\\.\\.40 are missing`))
      }
      await store.close()
    } finally {
      await remove()
    }
  })
})

describe('repair', () => {
  it('a bit-flipped record in the middle: the prefix and every intact record after it are kept, the chain holds, a peer fills in the rest', async () => {
    const { dir, remove } = await seeded()
    try {
      // What a peer still holds: the whole document.
      let store = await openStore(options(dir))
      const full = (await store.open('victim', 'yjs')).deltaSince(store.emptyVersion('yjs'))!
      const agentsBefore = (await store.history('victim')).map((record) => record.agent)
      await store.close()
      await tamper(dir, [{ key: logKey('victim', 5), change: flipBit(20) }])

      store = await openStore(options(dir))
      await assert.rejects(store.open('victim', 'yjs'), hasCode('CONCORD_CORRUPT_RECORD'))
      const events: unknown[] = []
      store.events.on('repaired', (event) => events.push(event))
      const report = await store.repair('victim')
      assert.deepEqual({ ...report, reason: undefined }, { name: 'victim', repaired: true, cutAt: 5, reason: undefined, lostRecords: 1, salvagedRecords: 5 })
      assert.match(report.reason!, /checksum/)
      assert.equal(events.length, 1)
      const victim = await store.open('victim', 'yjs')
      // The letters after 'e' were typed after it: Yjs keeps them waiting for it.
      assert.equal(textOf(victim), letters(4))
      const history = await store.history('victim')
      assert.deepEqual(
        history.map((record) => record.seq),
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
      )
      assert.deepEqual(
        history.map((record) => record.agent),
        agentsBefore.filter((_, i) => i !== 4),
      )
      assert.deepEqual((await store.verify('victim')).problems, [])
      // The peer's state brings the lost letter; the waiting ones land with it.
      await store.applyRemote('victim', full)
      assert.equal(textOf(victim), letters(10))
      assert.equal(textOf(await store.open('other', 'yjs')), letters(5))
      await store.close()
      store = await openStore(options(dir))
      assert.equal(textOf(await store.open('victim', 'yjs')), letters(10))
      assert.deepEqual((await store.verify('victim')).problems, [])
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a counter missing a record in the middle loses nothing (a later increment carries its total); a healthy name is left alone', async () => {
    const temp = await tempDir('concord-repair-')
    try {
      let store = await openStore(options(temp.dir))
      const counter = (await store.open('n', 'pncounter')) as unknown as { increment(n: number): unknown; value(): number }
      for (let i = 1; i <= 6; i++) {
        counter.increment(i)
        await store.flush()
      }
      await store.close()
      await tamper(temp.dir, [{ key: logKey('n', 3), change: () => undefined }])
      store = await openStore(options(temp.dir))
      assert.deepEqual(await store.repair('other-name').catch((error) => error.code), 'CONCORD_NOT_FOUND')
      const report = await store.repair('n')
      assert.equal(report.cutAt, 3)
      assert.equal(report.lostRecords, 1)
      assert.equal(report.salvagedRecords, 3)
      // Each increment's delta holds the agent's new total, so record 4 covers the lost record 3.
      assert.equal((await store.open('n', 'pncounter')).value(), 1 + 2 + 3 + 4 + 5 + 6)
      // Healthy (and open) now: nothing to do.
      assert.deepEqual(await store.repair('n'), { name: 'n', repaired: false })
      // Damage before the newest checkpoint: the name opens, but an open name is not rewritten.
      await store.checkpoint('n')
      await store.close()
      await tamper(temp.dir, [{ key: logKey('n', 1), change: flipBit(15) }])
      store = await openStore(options(temp.dir))
      assert.equal((await store.open('n', 'pncounter')).value(), 21)
      await assert.rejects(store.repair('n'), hasCode('CONCORD_LOCKED'))
      await store.close()
      store = await openStore(options(temp.dir))
      assert.equal((await store.repair('n')).cutAt, 1)
      assert.deepEqual((await store.verify('n')).problems, [])
      assert.equal((await store.open('n', 'pncounter')).value(), 21)
      await store.close()
      store = await openStore(options(temp.dir))
      assert.deepEqual(await store.repair('n'), { name: 'n', repaired: false })
      assert.equal((await store.history('n')).length, 4)
      await store.close()
    } finally {
      await temp.remove()
    }
  })
})
