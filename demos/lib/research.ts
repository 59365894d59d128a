/**
 * The scripted research agent of the shared-context demo: deterministic, no
 * model. Agents share a plan (LWW register), claim tasks in an OR-set,
 * append findings to a Yjs document, mark tasks done and count them.
 *
 * Claiming without a coordinator: an agent adds `task@me` to `claims`,
 * waits until every connected peer has persisted it (`flush({ acks })`),
 * gives concurrent claims a moment to arrive, and yields if an agent with a
 * smaller id claimed the same task. It checks again before committing its
 * finding, which it does atomically with `done` and the counter.
 */
import { createHash } from 'node:crypto'
import type { Peer } from '../../peer/index.ts'
import type { ContextState, ResearchResult } from './protocol.ts'

/** The names the demo shares. */
export const CONTEXT_NAMES = { plan: 'plan', claims: 'claims', done: 'done', counter: 'tasks-done', context: 'context' } as const

/** The topic and its tasks. */
export const TOPIC = 'How can many AI agents share memory without a coordinator?'
/** The research tasks of {@link TOPIC}, each with what a scripted agent "finds". */
export const TASKS: ReadonlyArray<readonly [string, string]> = [
  ['crdt-basics', 'CRDTs merge concurrent updates commutatively, so replicas that saw the same updates agree without coordination.'],
  ['delta-sync', 'Delta-state CRDTs ship only what a peer lacks; resync after an outage costs the gap, not the whole state.'],
  ['durability', 'A write-ahead log with group commit makes an acknowledged write survive a crash; checkpoints bound recovery time.'],
  ['documents', 'Yjs and Automerge documents merge rich text and JSON the same way counters and sets do.'],
  ['partitions', 'During a partition every side keeps writing; after the heal anti-entropy brings all sides to one state.'],
  ['time-travel', 'A hash-chained log gives history, values at any version, and reverts that replicate like any change.'],
  ['access', 'Per-peer credentials and per-name access decide who may read or write what, checked at the handshake and on every write.'],
  ['claims', 'Task claims in an add-wins OR-set with a deterministic tie-break let agents split work without a lock server.'],
]

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function claimsOf(claims: readonly string[], task: string): string[] {
  return claims
    .filter((claim) => claim.startsWith(`${task}@`))
    .map((claim) => claim.slice(task.length + 1))
    .sort()
}

/** Deterministic "work time" of an agent on a task (ms). */
function workTime(agent: string, task: string, base: number): number {
  const hash = createHash('sha256').update(`${agent}/${task}`).digest()
  return base + (hash[0] % Math.max(1, base))
}

/** The finding an agent writes for a task. */
export function findingFor(task: string, agent: string): string {
  const text = TASKS.find(([name]) => name === task)?.[1] ?? `notes on ${task}`
  return `[${task}] ${text} (by ${agent})`
}

/** Planner: publishes the plan. */
export async function publishPlan(peer: Peer, topic: string, tasks: string[], peers: number): Promise<void> {
  const plan = await peer.register(CONTEXT_NAMES.plan)
  plan.set({ topic, tasks, status: 'researching' })
  await peer.flush({ acks: peers, timeoutMs: 15_000 })
}

/** A research agent's loop: claim, research, commit, until every task is done. */
export async function research(peer: Peer, options: { peers: number; workMs: number }): Promise<ResearchResult> {
  const me = peer.agentId
  const plan = await peer.register<{ tasks?: string[] }>(CONTEXT_NAMES.plan)
  const claims = await peer.set<string>(CONTEXT_NAMES.claims)
  const done = await peer.set<string>(CONTEXT_NAMES.done)
  const counter = await peer.counter(CONTEXT_NAMES.counter)
  const context = await peer.yjs(CONTEXT_NAMES.context)
  const findings = context.doc.getArray<string>('findings')
  const completed: string[] = []
  const withdrawn: string[] = []
  const deadline = Date.now() + 60_000
  while (!Array.isArray(plan.value()?.tasks)) {
    if (Date.now() > deadline) throw new Error(`${me}: no plan arrived`)
    await sleep(20)
  }
  const tasks = plan.value()!.tasks!
  // Start at a different task per agent (agents spread out; claims settle the rest).
  const offset = [...me].reduce((sum, ch) => sum + ch.charCodeAt(0), 0) % tasks.length
  const order = tasks.map((_, i) => tasks[(i + offset) % tasks.length])
  const ackAll = () => peer.flush({ acks: Math.min(options.peers, peer.connectedPeers.length), timeoutMs: 15_000 })
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${me}: research did not finish`)
    const current = claims.values()
    const open = order.filter((task) => !done.has(task) && claimsOf(current, task).every((agent) => agent === me))
    if (open.length === 0) {
      if (tasks.every((task) => done.has(task))) break
      await sleep(30) // tasks claimed by others are still in progress
      continue
    }
    const task = open[0]
    claims.add(`${task}@${me}`)
    await ackAll()
    await sleep(30)
    const winner = () => claimsOf(claims.values(), task)[0]
    if (winner() !== me) {
      claims.delete(`${task}@${me}`)
      withdrawn.push(task)
      continue
    }
    await sleep(workTime(me, task, options.workMs))
    if (done.has(task) || winner() !== me) {
      claims.delete(`${task}@${me}`)
      withdrawn.push(task)
      continue
    }
    await peer.transact(() => {
      findings.push([findingFor(task, me)])
      done.add(task)
      counter.increment()
    })
    await ackAll()
    completed.push(task)
  }
  return { completed, withdrawn }
}

/** Planner: waits for every task, then writes the summary and closes the plan. */
export async function summarize(peer: Peer, timeoutMs: number): Promise<string> {
  const plan = await peer.register<{ topic?: string; tasks?: string[]; status?: string }>(CONTEXT_NAMES.plan)
  const done = await peer.set<string>(CONTEXT_NAMES.done)
  const context = await peer.yjs(CONTEXT_NAMES.context)
  const deadline = Date.now() + timeoutMs
  const tasks = plan.value()?.tasks ?? []
  while (!tasks.every((task) => done.has(task))) {
    if (Date.now() > deadline) throw new Error('planner: tasks not done in time')
    await sleep(30)
  }
  const findings = context.doc.getArray<string>('findings').toArray()
  const summary = `${plan.value()?.topic}\n${findings.length} findings from ${new Set(findings.map((f) => /\(by (.+)\)$/.exec(f)?.[1])).size} agents on ${tasks.length} tasks.`
  await peer.transact(() => {
    const text = context.doc.getText('summary')
    text.insert(0, summary)
    plan.set({ ...plan.value(), status: 'complete' })
  })
  await peer.flush({ acks: peer.connectedPeers.length, timeoutMs: 15_000 })
  return summary
}

/** The demo state as this agent holds it, with a digest for convergence checks. */
export async function contextState(peer: Peer): Promise<ContextState> {
  const plan = (await peer.register(CONTEXT_NAMES.plan)).value() as ContextState['plan']
  const claims = [...(await peer.set<string>(CONTEXT_NAMES.claims)).values()].sort()
  const done = [...(await peer.set<string>(CONTEXT_NAMES.done)).values()].sort()
  const tasksDone = (await peer.counter(CONTEXT_NAMES.counter)).value()
  const context = await peer.yjs(CONTEXT_NAMES.context)
  const findings = context.doc.getArray<string>('findings').toArray()
  const summary = context.doc.getText('summary').toString()
  const digest = createHash('sha256').update(JSON.stringify({ plan, claims, done, tasksDone, findings, summary })).digest('hex')
  return { digest, plan, claims, done, tasksDone, findings, summary }
}
