import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runPeerScenario } from './helpers/peer-scenario.ts'

// npm run test:chaos: 1,000 seeds of the peer scenario (CONCORD_CHAOS_SEEDS to change the count).
const COUNT = Number(process.env.CONCORD_CHAOS_SEEDS ?? 1000)

test(`peers with stores, chaos on the simulated network: ${COUNT} seeds`, { timeout: 4 * 3_600_000 }, async () => {
  const failed: string[] = []
  for (let seed = 1000; seed < 1000 + COUNT; seed++) {
    const result = await runPeerScenario(seed)
    if (!result.converged || !result.durable) failed.push(`${seed} (${result.difference ?? 'not durable'})`)
  }
  assert.deepEqual(
    failed,
    [],
    `seeds that failed (replay: CONCORD_SEED=<seed> node scripts/run-tests.mjs test/peer/sim-convergence.test.ts): ${failed.join(', ')}`,
  )
})
