import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runPeerScenario, type PeerScenarioResult } from './helpers/peer-scenario.ts'

// Peers made by createPeer over storage that survives their crashes, on the
// seeded simulated network. CONCORD_SEED=<n> runs only that seed (a failing
// seed replays exactly); test/peer/sim-convergence.chaos.test.ts runs 1,000.
const only = process.env.CONCORD_SEED
const SEEDS = only !== undefined ? [Number(only)] : Array.from({ length: 16 }, (_, i) => i + 1)

function explain(result: PeerScenarioResult): string {
  const { values, ...rest } = result
  return `seed ${result.seed} (replay: CONCORD_SEED=${result.seed} node scripts/run-tests.mjs test/peer/sim-convergence.test.ts): ${JSON.stringify(rest)}`
}

test(`peers with stores converge on the faulty simulated network (${SEEDS.length} seeds)`, async () => {
  let faults = 0
  let crashes = 0
  let transactions = 0
  for (const seed of SEEDS) {
    const result = await runPeerScenario(seed)
    assert.ok(result.converged, `did not converge: ${explain(result)}`)
    assert.ok(result.durable, `not the same after a restart from storage: ${explain(result)}`)
    assert.ok(result.commitsIn > 0, `no commit travelled: ${explain(result)}`)
    faults += result.dropped + result.duplicated + result.reordered
    crashes += result.crashes
    transactions += result.transactions
  }
  if (only === undefined) {
    assert.ok(faults > 0, 'the scenarios injected frame faults')
    assert.ok(crashes > 0, 'the scenarios crashed peers')
    assert.ok(transactions > 0, 'the scenarios ran transactions')
  }
})

test('peers with stores on the simulated network: a seed replays exactly (values included)', async () => {
  const seed = only !== undefined ? Number(only) : 5
  const first = await runPeerScenario(seed)
  const again = await runPeerScenario(seed)
  assert.deepEqual(again, first)
})
