import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runScenario } from './helpers/convergence.ts'

// Seeds of the default run; test/sync/convergence.chaos.test.ts runs 1,000.
// A failing seed replays exactly: runScenario(seed).
const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1)

test(`sync convergence on the faulty simulated network (${SEEDS.length} seeds)`, async () => {
  let faults = 0
  for (const seed of SEEDS) {
    const result = await runScenario(seed)
    assert.ok(result.converged, `seed ${seed} did not converge: ${JSON.stringify(result, null, 1)}`)
    faults += result.dropped + result.duplicated + result.reordered
    assert.ok(Object.keys(JSON.parse(result.values.p0)).length > 0, `seed ${seed}: no data at all`)
  }
  assert.ok(faults > 0, 'the scenarios injected faults')
})

test('sync convergence: a seed replays exactly', async () => {
  // Everything but the values: Automerge draws a random actor id per document,
  // so which concurrent write wins a conflict differs between runs.
  const strip = ({ values, ...rest }: Awaited<ReturnType<typeof runScenario>>) => ({ ...rest, names: Object.keys(values) })
  const first = await runScenario(7)
  const again = await runScenario(7)
  assert.deepEqual(strip(again), strip(first))
})

test('sync convergence with 300 names, new peers (reconcile) mixed with old ones (VERSIONS), partitions, crashes, drops (4 seeds)', async () => {
  let reconciliations = 0
  let versions = 0
  for (const seed of [101, 102, 103, 104]) {
    const result = await runScenario(seed, { names: 300, legacy: (index) => index % 2 === 1 })
    assert.ok(result.converged, `seed ${seed} did not converge: ${JSON.stringify({ ...result, values: undefined })}`)
    assert.ok(Object.keys(JSON.parse(result.values.p0)).length > 100, `seed ${seed}: too few names written`)
    reconciliations += result.reconciliations
    versions += result.versionsSent
  }
  assert.ok(reconciliations > 0, 'no reconciliation ran')
  assert.ok(versions > 0, 'no VERSIONS (old peers) ran')
})

test('sync convergence with 300 names, every peer reconciling (3 seeds)', async () => {
  for (const seed of [201, 202, 203]) {
    const result = await runScenario(seed, { names: 300 })
    assert.ok(result.converged, `seed ${seed} did not converge: ${JSON.stringify({ ...result, values: undefined })}`)
    assert.ok(result.reconciliations > 0, `seed ${seed}: no reconciliation ran`)
  }
})
