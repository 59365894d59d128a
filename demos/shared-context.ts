/**
 * Demo 1, shared context: several agent processes research a topic
 * together, peer-to-peer over WebSocket, each on its own LevelDB folder.
 * The planner publishes the plan (an LWW register); researchers claim tasks
 * in an OR-set, append findings to a shared Yjs document, mark tasks done
 * and count them in a PN-counter; the planner writes the summary. The
 * agents are scripted and deterministic (no model).
 *
 *   npm run demo:context [-- --short]
 */
import { poll, runDemo, section, type Check } from './lib/demo-runner.ts'
import type { ContextState } from './lib/protocol.ts'
import { TASKS, TOPIC } from './lib/research.ts'

await runDemo('demo-context', 'Demo 1 — shared context: agents research a topic together', async (cluster, options) => {
  const researchers = options.short ? ['scout', 'analyst'] : ['scout', 'analyst', 'critic']
  const ids = ['planner', ...researchers]
  const tasks = TASKS.slice(0, options.short ? 5 : TASKS.length).map(([task]) => task)

  section(`starting ${ids.length} agent processes`)
  const agents = await cluster.startAll(ids)
  for (const agent of agents) console.log(`  ${agent.id.padEnd(8)} pid ${agent.child.pid}  ${agent.url}  (${agent.dir})`)
  // Full mesh: each agent dials the ones started before it.
  await Promise.all(ids.map((id, i) => cluster.request(id, 'links', { urls: ids.slice(0, i).map((other) => cluster.agent(other).url) })))
  const meshed = await poll(
    () => Promise.all(ids.map((id) => cluster.request(id, 'stats', {}))),
    (all) => all.every((s) => s.peers.length === ids.length - 1),
    15_000,
  )
  console.log(`  full mesh: ${meshed.ok ? 'every agent connected to every other' : 'NOT complete'}`)

  section('planner publishes the plan (LWW register "plan")')
  console.log(`  topic: ${TOPIC}`)
  console.log(`  tasks: ${tasks.join(', ')}`)
  await cluster.request('planner', 'plan', { topic: TOPIC, tasks, peers: ids.length - 1 })

  section('researchers claim tasks (OR-set "claims"), write findings (Yjs "context"), count them (counter "tasks-done")')
  const results = await Promise.all(
    researchers.map((id) => cluster.request(id, 'research', { peers: ids.length - 1, workMs: options.short ? 40 : 120 }, 60_000)),
  )
  for (const [i, id] of researchers.entries()) {
    console.log(
      `  ${id.padEnd(8)} completed ${results[i].completed.length}: ${results[i].completed.join(', ') || '-'}` +
        (results[i].withdrawn.length > 0 ? `  (yielded ${results[i].withdrawn.join(', ')} to a concurrent claim)` : ''),
    )
  }
  const { summary } = await cluster.request('planner', 'summarize', { timeoutMs: 30_000 })

  section('convergence')
  const converged = await poll(
    () => Promise.all(ids.map((id) => cluster.request(id, 'context', {}))),
    (states) => new Set(states.map((s) => s.digest)).size === 1 && states[0].plan?.status === 'complete',
    15_000,
  )
  const states: ContextState[] = converged.value
  for (const [i, id] of ids.entries())
    console.log(`  ${id.padEnd(8)} state ${states[i].digest.slice(0, 16)}  tasks-done ${states[i].tasksDone}  findings ${states[i].findings.length}`)
  const state = states[0]
  section('the shared context document (as every agent holds it)')
  for (const finding of state.findings) console.log(`  - ${finding}`)
  console.log(`\n  summary: ${summary.replace(/\n/g, '\n           ')}`)

  const completed = results.flatMap((r) => r.completed)
  const findingTasks = state.findings.map((f) => /^\[([^\]]+)\]/.exec(f)?.[1])
  return [
    { ok: meshed.ok, what: `${ids.length} agent processes connected peer-to-peer over WebSocket` },
    { ok: converged.ok, what: 'every agent holds the same state (plan, claims, done, counter, document)' },
    { ok: tasks.every((task) => state.done.includes(task)), what: `every task is done (${state.done.length}/${tasks.length})` },
    { ok: state.tasksDone === tasks.length, what: `the counter counts each task once (${state.tasksDone})` },
    { ok: completed.length === tasks.length && new Set(completed).size === tasks.length, what: 'no task was researched twice (claims settled every conflict)' },
    { ok: tasks.every((task) => findingTasks.filter((t) => t === task).length === 1), what: 'the document holds exactly one finding per task' },
    { ok: state.plan?.status === 'complete' && state.summary.length > 0, what: 'the planner closed the plan with a summary' },
    { ok: researchers.every((_, i) => results[i].completed.length > 0), what: 'every researcher contributed' },
  ] satisfies Check[]
})
