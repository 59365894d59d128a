import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runScenario } from './helpers/convergence.ts'

// npm run test:chaos: 1,000 seeds (CONCORD_CHAOS_SEEDS to change the count).
const COUNT = Number(process.env.CONCORD_CHAOS_SEEDS ?? 1000)

test(`sync convergence chaos: ${COUNT} seeds`, { timeout: 3_600_000 }, async () => {
  const failed: number[] = []
  for (let seed = 1000; seed < 1000 + COUNT; seed++) {
    const result = await runScenario(seed)
    if (!result.converged) failed.push(seed)
  }
  assert.deepEqual(failed, [], `seeds that did not converge (replay with runScenario(seed)): ${failed.join(', ')}`)
})
