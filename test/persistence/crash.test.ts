/**
 * Crash test with real processes: a child appends in `sync` mode and reports
 * every acknowledged seq; the parent kills it with SIGKILL at a random moment,
 * then checks that every acknowledged record is there, the log has no holes,
 * the hash chain holds, and the two names written atomically together hold
 * the same records. 20 cycles in the default list, 100 in `npm run test:crash`
 * (or CONCORD_CRASH_CYCLES). CONCORD_SEED replays a run.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { openStore } from '../../persistence/index.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { runAndKill } from './crash-harness.ts'
import { tempDir, textOf } from './helpers.ts'

const cycles = Number(process.env.CONCORD_CRASH_CYCLES ?? (process.env.CONCORD_TEST_LIST === 'crash' ? 100 : 20))
const seed = Number(process.env.CONCORD_SEED ?? Date.now() % 1_000_000)

it(`SIGKILL at random moments loses no acknowledged record (${cycles} cycles, seed ${seed})`, { timeout: 600_000 }, async () => {
  const prng = new Prng(seed)
  const random = () => prng.next()
  const { dir, remove } = await tempDir('concord-crash-')
  try {
    let previous = 0
    let totalAcked = 0
    for (let cycle = 0; cycle < cycles; cycle++) {
      const acked = await runAndKill(
        'test/persistence/fixtures/crash-writer.ts',
        [dir, '8'],
        5 + Math.floor(random() * 120),
        (line) => line === 'ready' || line.startsWith('ack '),
      )
      totalAcked += acked.length
      const store = await openStore({ dir, agentId: 'crash-writer', sweepMs: 0, checkpoint: { onClose: false } })
      try {
        const a = await store.open('a', 'yjs')
        const b = await store.open('b', 'yjs')
        const lastA = store.committedSeq('a')
        const lastB = store.committedSeq('b')
        const maxAck = Math.max(0, ...acked)
        const context = `seed ${seed}, cycle ${cycle}`
        assert.ok(lastA >= maxAck, `${context}: acknowledged seq ${maxAck} but the log ends at ${lastA}`)
        assert.ok(lastA >= previous, `${context}: the log went back from ${previous} to ${lastA}`)
        assert.equal(lastA, lastB, `${context}: the atomic pair diverged`)
        // One character per record: the state holds exactly the records 1..lastSeq.
        assert.equal(textOf(a).length, lastA, context)
        assert.equal(textOf(b).length, lastB, context)
        for (const name of ['a', 'b']) {
          const report = await store.verify(name)
          assert.deepEqual(report.problems, [], `${context}: ${name}`)
          const history = await store.history(name, { limit: 10_000 })
          history.forEach((record, i) => assert.equal(record.seq, report.firstSeq + i, `${context}: hole in ${name}`))
        }
        assert.equal(store.truncations.length, 0, `${context}: a torn tail after a process crash`)
        previous = lastA
      } finally {
        await store.close()
      }
    }
    assert.ok(totalAcked > 0, 'the writer acknowledged nothing')
  } finally {
    await remove()
  }
})
