/**
 * Retention as a lifecycle policy (issue 16): the default keeps every record
 * through restarts, checkpoints and compaction; `{ archiveAfterMs }` moves
 * older records to segment files that history/at/verify still read;
 * `{ deleteAfterMs }` deletes them. Real LevelDB folders.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, writeFileSync, readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { openStore, type Retention } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import { tempDir, textOf, typeText } from '../persistence/helpers.ts'

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code
const DIGITS = '0123456789'

/** Types `count` digits into `doc`, one record each. */
async function typeDigits(store: Awaited<ReturnType<typeof openStore>>, name: string, from: number, count: number): Promise<void> {
  const doc = await store.open(name, 'yjs')
  for (let i = from; i < from + count; i++) {
    typeText(doc, DIGITS[i % 10])
    await store.flush()
  }
}

function expected(seq: number): string {
  let out = ''
  for (let i = 0; i < seq; i++) out += DIGITS[i % 10]
  return out
}

/** The log keys LevelDB still holds for `name` (the hot tier), read with the store closed. */
async function hotSeqs(dir: string, name: string, upTo: number): Promise<number[]> {
  const storage = await openLevelStorage({ dir })
  try {
    const out: number[] = []
    for (let seq = 1; seq <= upTo; seq++) if (await storage.get(logKey(name, seq))) out.push(seq)
    return out
  } finally {
    await storage.close()
  }
}

describe('retention: the default keeps history', () => {
  it('survives restarts, checkpoints and compaction: at(1), the whole history and verify', async () => {
    const { dir, remove } = await tempDir()
    try {
      let store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 10 } })
      await typeDigits(store, 'plan', 0, 35)
      await store.close() // checkpoint on close
      store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 10 } })
      await typeDigits(store, 'plan', 35, 10)
      assert.equal(await store.checkpoint('plan'), 45)
      // Compaction as `concord compact` does it: a checkpoint of every name, then gc.
      await store.gc()
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.equal(textOf(await store.at('plan', 1)), '0')
      assert.equal(textOf(await store.at('plan', 17)), expected(17))
      const history = await store.history('plan', { limit: 1000 })
      assert.deepEqual(
        history.map((h) => h.seq),
        Array.from({ length: 45 }, (_, i) => i + 1),
      )
      const report = await store.verify('plan')
      assert.deepEqual(report.problems, [])
      assert.equal(report.records, 45)
      // A revert to seq 1 works, and again after a restart (it failed the second time under the old default).
      assert.notEqual(await store.revert('plan', 1), null)
      await store.close()
      store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
      assert.equal(textOf(await store.open('plan', 'yjs')), '0')
      assert.equal(textOf(await store.at('plan', 2)), '01')
      assert.deepEqual((await store.verify('plan')).problems, [])
      await store.close()
      assert.deepEqual((await hotSeqs(dir, 'plan', 46)).length, 46)
    } finally {
      await remove()
    }
  })
})

describe('retention: the policy is checked', () => {
  it('an unknown shape or a window that is not a time is refused with CONCORD_INVALID_ARGUMENT', async () => {
    for (const bad of [{ archiveAfterMs: -1 }, { deleteAfterMs: 'soon' }, { keep: 'all' }, { archiveAfterMs: 1, deleteAfterMs: 1 }, 'forever']) {
      await assert.rejects(openStore({ agentId: 'a', sweepMs: 0, retention: bad as never }), hasCode('CONCORD_INVALID_ARGUMENT'), JSON.stringify(bad))
    }
    const store = await openStore({ agentId: 'a', sweepMs: 0 })
    try {
      await assert.rejects(store.open('n', 'gcounter', { retention: { deleteAfterMs: Number.NaN } }), hasCode('CONCORD_INVALID_ARGUMENT'))
      await store.open('n', 'gcounter', { retention: { deleteAfterMs: 60_000 } })
    } finally {
      await store.close()
    }
  })
})

describe('retention: time windows', () => {
  const open = (dir: string, retention: Retention, clock: { now: number }) =>
    openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 10, everyMs: 0, onClose: false }, retention, now: () => clock.now })

  it('archiveAfterMs moves older records (up to the newest checkpoint) to segment files; history, at and verify still read them, across restarts', async () => {
    const { dir, remove } = await tempDir()
    const archiveDir = `${dir}.archive`
    try {
      const clock = { now: 1_000_000 }
      let store = await open(dir, { archiveAfterMs: 60_000 }, clock)
      await typeDigits(store, 'plan', 0, 25) // checkpoints at 10, 20
      clock.now += 120_000
      await typeDigits(store, 'plan', 25, 10) // checkpoint at 30, taken after the window
      // Records 1..25 are older than the window (26.. are not), and before the newest checkpoint (30).
      assert.deepEqual(await store.applyRetention('plan'), { name: 'plan', archived: 25, deleted: 0 })
      assert.deepEqual(await store.applyRetention('plan'), { name: 'plan', archived: 0, deleted: 0 })
      assert.equal(readdirSync(join(archiveDir, 'segments')).length, 1)
      assert.equal((await store.names())[0].records, 10)
      const check = async (): Promise<void> => {
        assert.deepEqual(
          (await store.history('plan', { limit: 100 })).map((h) => h.seq),
          Array.from({ length: 35 }, (_, i) => i + 1),
        )
        assert.deepEqual(
          (await store.history('plan', { reverse: true, from: 27, limit: 4 })).map((h) => h.seq),
          [27, 26, 25, 24],
        )
        for (const seq of [1, 5, 19, 25, 26, 33]) assert.equal(textOf(await store.at('plan', seq)), expected(seq), `at(${seq})`)
        const report = await store.verify('plan')
        assert.deepEqual(report.problems, [])
        assert.equal(report.records, 35)
      }
      await check()
      // The sweep applies the window too: the next segment (26..30, up to the newest checkpoint) once they are old enough.
      clock.now += 120_000
      await store.sweep()
      assert.equal(readdirSync(join(archiveDir, 'segments')).length, 2)
      await check()
      await store.close()
      assert.deepEqual(await hotSeqs(dir, 'plan', 35), [31, 32, 33, 34, 35])
      store = await open(dir, { archiveAfterMs: 60_000 }, clock)
      assert.equal(textOf(await store.open('plan', 'yjs')), expected(35))
      await check()
      // A damaged segment fails verify (and at before it), it is never read as if nothing were there.
      const first = readdirSync(join(archiveDir, 'segments')).sort()[0]
      const bytes = readFileSync(join(archiveDir, 'segments', first))
      bytes[bytes.length - 5] ^= 0xff
      writeFileSync(join(archiveDir, 'segments', first), bytes)
      const report = await store.verify('plan')
      assert.equal(report.ok, false)
      assert.match(report.problems.join('\n'), /do not match their hash/)
      await assert.rejects(store.at('plan', 3), hasCode('CONCORD_CORRUPT_RECORD'))
      // Deleting the name deletes its segments.
      assert.equal(await store.delete('plan'), true)
      assert.deepEqual(readdirSync(join(archiveDir, 'segments')), [])
      await store.close()
    } finally {
      await remove()
      await rm(archiveDir, { recursive: true, force: true })
    }
  })

  it('an archived tier goes with the name into a whole-name archive and comes back', async () => {
    const { dir, remove } = await tempDir()
    const archiveDir = `${dir}.archive`
    try {
      const clock = { now: 1_000_000 }
      const store = await open(dir, { archiveAfterMs: 1000 }, clock)
      await typeDigits(store, 'plan', 0, 12)
      clock.now += 5000
      assert.equal((await store.applyRetention('plan')).archived, 10)
      await store.archive('plan')
      assert.equal(textOf(await store.open('plan', 'yjs')), expected(12))
      assert.equal(textOf(await store.at('plan', 4)), expected(4))
      assert.deepEqual((await store.verify('plan')).problems, [])
      await store.close()
    } finally {
      await remove()
      await rm(archiveDir, { recursive: true, force: true })
    }
  })

  it('deleteAfterMs deletes older records: history starts after them, at() before them is NOT_FOUND, verify holds', async () => {
    const { dir, remove } = await tempDir()
    try {
      const clock = { now: 1_000_000 }
      let store = await open(dir, { deleteAfterMs: 60_000 }, clock)
      await typeDigits(store, 'plan', 0, 25)
      clock.now += 120_000
      await typeDigits(store, 'plan', 25, 10)
      assert.deepEqual(await store.applyRetention('plan'), { name: 'plan', archived: 0, deleted: 25 })
      assert.equal(existsSync(`${dir}.archive`), false)
      assert.equal((await store.history('plan'))[0].seq, 26)
      await assert.rejects(store.at('plan', 5), hasCode('CONCORD_NOT_FOUND'))
      await assert.rejects(store.at('plan', 20), hasCode('CONCORD_NOT_FOUND'))
      // The cut had no checkpoint: one was written there, from a replay, to anchor what is left.
      assert.equal(textOf(await store.at('plan', 25)), expected(25))
      assert.equal(textOf(await store.at('plan', 27)), expected(27))
      assert.deepEqual((await store.verify('plan')).problems, [])
      // Later checkpoints keep the one that anchors the log.
      await typeDigits(store, 'plan', 35, 30)
      assert.deepEqual((await store.verify('plan')).problems, [])
      await store.close()
      assert.deepEqual((await hotSeqs(dir, 'plan', 25)).length, 0)
      store = await open(dir, { deleteAfterMs: 60_000 }, clock)
      assert.equal(textOf(await store.open('plan', 'yjs')), expected(65))
      assert.deepEqual((await store.verify('plan')).problems, [])
      await store.close()
    } finally {
      await remove()
    }
  })
})
