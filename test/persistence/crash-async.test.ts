/**
 * Crash test of `async` mode with real processes: a child types into a Yjs
 * document (one character per transaction, so queued changes are merged
 * into one record) and reports how many characters its `committed` events
 * acknowledged; the parent kills it with SIGKILL at a random moment, then
 * checks that every acknowledged character is there (a process crash loses
 * nothing acknowledged in async mode), the log replays and verifies, and no
 * torn tail was found. 10 cycles in the default list, 50 in
 * `npm run test:crash` (or CONCORD_CRASH_CYCLES). CONCORD_SEED replays a run.
 * The second test does the same with remote changes of four names applied
 * in one turn (one async batch each round: the group commit). The third
 * kills a child creating counters with `openMany` (their first record
 * writes their metadata, no tail marker): every name acknowledged is there
 * with its increment, every other one holds 0 or 1.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { runAndKill } from './crash-harness.ts'
import { tempDir, textOf } from './helpers.ts'

const cycles = Number(process.env.CONCORD_CRASH_CYCLES ?? (process.env.CONCORD_TEST_LIST === 'crash' ? 50 : 10))
const seed = Number(process.env.CONCORD_SEED ?? Date.now() % 1_000_000)

/**
 * Runs `fixture` (with `args(cycle)`) and SIGKILLs it after a random number
 * of its lines (`kill(random)`), `cycles` times on one folder; after each,
 * opens the store and runs `check` with the highest count the child
 * acknowledged, then checks that no torn tail was found. Fails if the child
 * never acknowledged anything.
 */
async function killCycles(options: {
  readonly fixture: string
  readonly agentId: string
  readonly seed: number
  readonly cycles: number
  readonly args?: (cycle: number) => string[]
  readonly kill: (random: () => number) => number
  readonly check: (store: Store, acked: number, context: string, cycle: number) => Promise<void>
}): Promise<void> {
  const prng = new Prng(options.seed)
  const random = () => prng.next()
  const { dir, remove } = await tempDir(`concord-${options.agentId}-`)
  try {
    let totalAcked = 0
    for (let cycle = 0; cycle < options.cycles; cycle++) {
      const args = [dir, ...(options.args?.(cycle) ?? [])]
      const acked = (await runAndKill(options.fixture, args, options.kill(random), (line) => line === 'ready')).reduce((max, n) => Math.max(max, n), 0)
      totalAcked += acked
      const store = await openStore({ dir, agentId: options.agentId, sweepMs: 0, checkpoint: { onClose: false } })
      try {
        const context = `seed ${seed}, cycle ${cycle}`
        await options.check(store, acked, context, cycle)
        assert.equal(store.truncations.length, 0, `${context}: a torn tail after a process crash`)
      } finally {
        await store.close()
      }
    }
    assert.ok(totalAcked > 0, 'the writer acknowledged nothing')
  } finally {
    await remove()
  }
}

it(`async mode: SIGKILL at random moments loses no acknowledged change (${cycles} cycles, seed ${seed})`, { timeout: 600_000 }, async () => {
  let previous = 0
  await killCycles({
    fixture: 'test/persistence/fixtures/crash-writer-async.ts',
    agentId: 'crash-writer',
    seed,
    cycles,
    kill: (random) => 5 + Math.floor(random() * 150),
    check: async (store, acked, context) => {
      const text = textOf(await store.open('doc', 'yjs'))
      assert.ok(text.length >= acked, `${context}: ${acked} characters acknowledged but ${text.length} recovered`)
      assert.ok(text.length >= previous, `${context}: the text went back from ${previous} to ${text.length}`)
      assert.equal(text, 'x'.repeat(text.length), context)
      assert.deepEqual((await store.verify('doc')).problems, [], context)
      previous = text.length
    },
  })
})

/** The group case: 5 cycles in the default list, as many as the first in `npm run test:crash` or with CONCORD_CRASH_CYCLES. */
const groupCycles = process.env.CONCORD_TEST_LIST === 'crash' || process.env.CONCORD_CRASH_CYCLES !== undefined ? cycles : 5

it(`async mode: SIGKILL during group commits of remote changes (four names per batch) loses no acknowledged change (${groupCycles} cycles, seed ${seed})`, {
  timeout: 600_000,
}, async () => {
  await killCycles({
    fixture: 'test/persistence/fixtures/crash-writer-async-group.ts',
    agentId: 'crash-group',
    seed: seed + 1,
    cycles: groupCycles,
    kill: (random) => 5 + Math.floor(random() * 150),
    check: async (store, acked, context) => {
      for (const name of ['n0', 'n1', 'n2', 'n3']) {
        const text = textOf(await store.open(name, 'yjs'))
        assert.ok(text.length >= acked, `${context}: "${name}": ${acked} characters acknowledged but ${text.length} recovered`)
        assert.equal(text, 'x'.repeat(text.length), context)
        assert.deepEqual((await store.verify(name)).problems, [], `${context}: "${name}"`)
      }
    },
  })
})

/** Names created by openMany: 5 cycles in the default list, as many as the first in `npm run test:crash` or with CONCORD_CRASH_CYCLES. */
it(`async mode: SIGKILL while names are created by openMany and changed loses no acknowledged name (${groupCycles} cycles, seed ${seed})`, {
  timeout: 600_000,
}, async () => {
  await killCycles({
    fixture: 'test/persistence/fixtures/crash-writer-open-many.ts',
    agentId: 'crash-open-many',
    seed: seed + 2,
    cycles: groupCycles,
    args: (cycle) => [`c${cycle}`],
    kill: (random) => 20 + Math.floor(random() * 200),
    check: async (store, acked, context, cycle) => {
      const prefix = `c${cycle}`
      const listed = new Set((await store.listNames()).map(({ name }) => name).filter((name) => name.startsWith(`${prefix}/`)))
      for (let batch = 0; batch < acked; batch++) {
        for (let i = 0; i < 20; i++) {
          const name = `${prefix}/${batch}/${i}`
          assert.ok(listed.has(name), `${context}: "${name}" was acknowledged but is not stored`)
        }
      }
      for (const name of listed) {
        const value = ((await store.open(name, 'pncounter')) as PNCounterReplica).value()
        const batch = Number(name.split('/')[1])
        assert.ok(batch < acked ? value === 1 : value === 0 || value === 1, `${context}: "${name}" holds ${value}`)
        assert.deepEqual((await store.verify(name)).problems, [], `${context}: "${name}"`)
      }
    },
  })
})
