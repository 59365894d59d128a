/**
 * diff and blame of the types queries.test.ts does not cover (issue 16): an
 * OR-set (added and removed elements; who added each element still there),
 * an LWW register (old and new value; who set it) and a PN-counter with
 * decrements (delta per agent; each agent's contribution), on a hub and a
 * leaf of a three-agent session over WebSocket with LevelDB folders,
 * against expectations computed from the session's own script.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Peer } from '../../peer/index.ts'
import type { Store } from '../../persistence/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { hubAndAgents, untilLoggedEverywhere } from './helpers.ts'

type Agent = 'ana' | 'bo' | 'cy'
type Step =
  | { readonly name: 'tags'; readonly agent: Agent; readonly add?: string; readonly remove?: string }
  | { readonly name: 'status'; readonly agent: Agent; readonly value: string }
  | { readonly name: 'budget'; readonly agent: Agent; readonly amount: number }

/** One mutation per step (a record each). */
const script: readonly Step[] = [
  { name: 'tags', agent: 'ana', add: 'alpha' },
  { name: 'tags', agent: 'ana', add: 'beta' },
  { name: 'status', agent: 'ana', value: 'draft' },
  { name: 'budget', agent: 'ana', amount: 5 },
  { name: 'tags', agent: 'bo', remove: 'alpha' },
  { name: 'tags', agent: 'bo', add: 'gamma' },
  { name: 'budget', agent: 'bo', amount: -2 },
  { name: 'status', agent: 'bo', value: 'review' },
  { name: 'tags', agent: 'cy', add: 'delta' },
  { name: 'tags', agent: 'cy', remove: 'beta' },
  { name: 'budget', agent: 'cy', amount: 1 },
  { name: 'tags', agent: 'ana', add: 'alpha' },
  { name: 'status', agent: 'cy', value: 'done' },
  { name: 'budget', agent: 'bo', amount: -1 },
]

/** The script's consequences, computed without the store: per name, the record of each step and the state after it. */
function expectations() {
  const seqs = new Map<string, number>()
  const tags: Array<Set<string>> = [new Set()]
  const owners = new Map<string, { agent: Agent; seq: number }>()
  const statuses: Array<string | null> = [null]
  let statusSetter: { agent: Agent; seq: number } | undefined
  const budgets: number[] = [0]
  const parts = new Map<Agent, { amount: number; records: number }>()
  for (const step of script) {
    const seq = (seqs.get(step.name) ?? 0) + 1
    seqs.set(step.name, seq)
    if (step.name === 'tags') {
      const next = new Set(tags.at(-1))
      if (step.remove !== undefined) {
        next.delete(step.remove)
        owners.delete(step.remove)
      }
      if (step.add !== undefined) {
        next.add(step.add)
        owners.set(step.add, { agent: step.agent, seq })
      }
      tags.push(next)
    } else if (step.name === 'status') {
      statuses.push(step.value)
      statusSetter = { agent: step.agent, seq }
    } else {
      budgets.push(budgets.at(-1)! + step.amount)
      const part = parts.get(step.agent) ?? { amount: 0, records: 0 }
      part.amount += step.amount
      part.records++
      parts.set(step.agent, part)
    }
  }
  return { tags, owners, statuses, statusSetter: statusSetter!, budgets, parts }
}

test('diff and blame of a set, a register and a PN-counter match the session’s script, on the hub and a leaf', async () => {
  const dir = await tempDir('concord-queries-types-')
  let peers: Peer[] = []
  try {
    const session = await hubAndAgents(dir.path, ['ana', 'bo', 'cy'] as const)
    peers = session.peers
    const { hub, agents } = session
    const seqs = new Map<string, number>()
    for (const step of script) {
      const peer = agents.get(step.agent)!
      if (step.name === 'tags') {
        const set = await peer.set<string>('tags')
        await peer.transact(() => (step.remove !== undefined ? set.delete(step.remove) : set.add(step.add!)))
      } else if (step.name === 'status') {
        const register = await peer.register<string>('status')
        await peer.transact(() => register.set(step.value))
      } else {
        const counter = await peer.counter('budget')
        await peer.transact(() => (step.amount > 0 ? counter.increment(step.amount) : counter.decrement(-step.amount)))
      }
      const seq = (seqs.get(step.name) ?? 0) + 1
      seqs.set(step.name, seq)
      assert.equal(peer.store.committedSeq(step.name), seq, `one record for ${step.agent}'s change of ${step.name}`)
      await untilLoggedEverywhere(peers, step.name, seq, `${step.name} ${seq} everywhere`)
    }
    const expected = expectations()
    const sorted = (values: Iterable<string>) => [...values].sort()

    const check = async (store: Store, where: string): Promise<void> => {
      // The set: every pair of records, added and removed elements.
      const tagRecords = expected.tags.length - 1
      for (let from = 0; from <= tagRecords; from++) {
        for (let to = from; to <= tagRecords; to++) {
          const { changes } = await store.diff('tags', from, to)
          assert.equal(changes.kind, 'set')
          if (changes.kind !== 'set') return
          const before = expected.tags[from]
          const after = expected.tags[to]
          assert.deepEqual(
            [sorted(changes.added as string[]), sorted(changes.removed as string[])],
            [sorted([...after].filter((e) => !before.has(e))), sorted([...before].filter((e) => !after.has(e)))],
            `${where}: tags ${from}..${to}`,
          )
        }
      }
      const tagBlame = await store.blame('tags')
      assert.equal(tagBlame.blame.kind, 'set')
      if (tagBlame.blame.kind !== 'set') return
      assert.deepEqual(
        tagBlame.blame.elements.map((e) => [e.element, e.agent, (e as { seq?: number }).seq]).sort(),
        [...expected.owners].map(([element, by]) => [element, by.agent, by.seq]).sort(),
        `${where}: who added each element still there`,
      )

      // The register: old and new value; who set it.
      const statusRecords = expected.statuses.length - 1
      for (let from = 0; from < statusRecords; from++) {
        assert.deepEqual(
          (await store.diff('status', from, statusRecords)).changes,
          { kind: 'value', from: expected.statuses[from], to: expected.statuses[statusRecords] },
          `${where}: status ${from}..${statusRecords}`,
        )
      }
      const statusBlame = await store.blame('status')
      assert.equal(statusBlame.blame.kind, 'paths')
      if (statusBlame.blame.kind !== 'paths') return
      assert.deepEqual(
        statusBlame.blame.paths.map((p) => [p.path, p.agent, (p as { seq?: number }).seq]),
        [['', expected.statusSetter.agent, expected.statusSetter.seq]],
      )

      // The PN-counter: the delta per agent over any range, and each agent's contribution.
      const budgetRecords = expected.budgets.length - 1
      const budgetSteps = script.filter((s) => s.name === 'budget') as Array<Extract<Step, { name: 'budget' }>>
      for (let from = 0; from <= budgetRecords; from++) {
        const report = await store.diff('budget', from, budgetRecords)
        assert.deepEqual(report.changes, {
          kind: 'counter',
          from: expected.budgets[from],
          to: expected.budgets[budgetRecords],
          delta: expected.budgets[budgetRecords] - expected.budgets[from],
        })
        const perAgent = new Map<string, { delta: number; records: number }>()
        for (const step of budgetSteps.slice(from)) {
          const part = perAgent.get(step.agent) ?? { delta: 0, records: 0 }
          part.delta += step.amount
          part.records++
          perAgent.set(step.agent, part)
        }
        assert.deepEqual(
          report.byAgent,
          [...perAgent].map(([agent, part]) => ({ agent, ...part })).sort((a, b) => (a.agent < b.agent ? -1 : 1)),
          `${where}: budget ${from}..${budgetRecords} per agent`,
        )
      }
      const budgetBlame = await store.blame('budget')
      assert.equal(budgetBlame.blame.kind, 'counter')
      if (budgetBlame.blame.kind !== 'counter') return
      assert.equal(budgetBlame.blame.value, expected.budgets[budgetRecords])
      assert.deepEqual(
        [...budgetBlame.blame.contributions].sort((a, b) => (a.agent < b.agent ? -1 : 1)),
        [...expected.parts].map(([agent, part]) => ({ agent, ...part })).sort((a, b) => (a.agent < b.agent ? -1 : 1)),
      )
    }
    await check(hub.store, 'hub')
    await check(agents.get('cy')!.store, 'leaf cy')
  } finally {
    for (const peer of peers.reverse()) await peer.close()
    await dir.remove()
  }
})
