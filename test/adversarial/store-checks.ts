/**
 * What the reopened folder of an attacked server may hold: only what the
 * legitimate peers and the seeding wrote. Checks report every finding at
 * once, not only the first.
 */
import assert from 'node:assert/strict'
import type { LegitimateView, StoreView } from './harness.ts'
import { PROBE_NAMES } from './fixtures/probe-names.ts'

const LEGIT_NAMES = new Set<string>(Object.values(PROBE_NAMES))
const LEGIT_AGENTS = new Set(['alice', 'bob', 'carol', 'server'])

/** Collects findings; `done` throws one error listing them all. */
export class Findings {
  private readonly found: string[] = []
  add(condition: boolean, finding: string): void {
    if (!condition) this.found.push(finding)
  }
  done(): void {
    assert.deepEqual(this.found, [], this.found.join('; '))
  }
}

/** Every name is a probe name or a seeded counter, and only the legitimate peers (or the server's seeding) wrote the probe names. */
export async function checkLegitimateOnly(store: StoreView, findings: Findings, allowed: readonly string[] = []): Promise<void> {
  const extra = store.names.map((info) => info.name).filter((name) => !LEGIT_NAMES.has(name) && !name.startsWith('seed/') && !allowed.includes(name))
  findings.add(extra.length === 0, `${extra.length} names the attacker created (${extra.slice(0, 3).join(', ')})`)
  for (const name of LEGIT_NAMES) {
    if (!store.has(name)) continue
    const strangers = [...new Set(await store.agents(name))].filter((agent) => !LEGIT_AGENTS.has(agent))
    findings.add(strangers.length === 0, `"${name}" has records by ${strangers.join(', ')}`)
  }
}

/** {@link checkLegitimateOnly}, then: neither the legitimate peers nor the folder's copy of `names` hold `mark`, and no record of them is by `agent`. */
export async function checkNothingOf(store: StoreView, peers: LegitimateView, mark: string, names: readonly string[], agent?: string): Promise<void> {
  const findings = new Findings()
  await checkLegitimateOnly(store, findings)
  findings.add(!JSON.stringify(peers).includes(mark), `the legitimate peers received "${mark}"`)
  for (const name of names) {
    if (!store.has(name)) continue
    findings.add(!JSON.stringify(await store.value(name)).includes(mark), `the folder holds "${mark}" in ${name}`)
    if (agent) findings.add(!(await store.agents(name)).includes(agent), `${name} has records logged as ${agent}`)
  }
  findings.done()
}

/** Only legitimate data (see {@link checkLegitimateOnly}). */
export async function onlyLegitimateData(store: StoreView): Promise<void> {
  const findings = new Findings()
  await checkLegitimateOnly(store, findings)
  findings.done()
}
