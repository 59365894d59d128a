/**
 * `npm start`: the flagship demo, on the embedded default (no server to
 * install). Four agent processes, each with its own LevelDB folder under
 * ./.data/start, sync peer-to-peer over real WebSocket connections while
 * writing concurrently. The run injects a partition, SIGKILLs one agent
 * while it is cut off (its writes acknowledged by its disk only), restarts
 * it from its folder, heals, then verifies that every agent converged and
 * that no acknowledged write was lost. It prints a summary and the path of
 * an HTML report, and leaves no process running.
 *
 *   npm start [-- --short] [--data DIR] [--out FILE]
 */
import { writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { bytes, runDemo, section } from './lib/demo-runner.ts'
import { peakDivergence, runPartitionScenario, type Phase } from './lib/partition-scenario.ts'
import { renderReport } from './lib/report.ts'

await runDemo('start', 'Concord — agents sharing state peer-to-peer through a partition and a crash', async (cluster, options) => {
  const agents = ['planner', 'scout', 'analyst', 'critic']
  const [planner, scout, analyst, critic] = agents
  const rounds = options.short ? 1 : 3
  const phases: Phase[] = [
    { label: 'connected', groups: [agents], writes: rounds + 1 },
    {
      label: 'partition 2|2',
      groups: [
        [planner, scout],
        [analyst, critic],
      ],
      writes: rounds + 1,
    },
    { label: 'critic cut off', groups: [[planner, scout, analyst], [critic]], writes: rounds, after: [{ kill: critic }] },
    { label: 'critic down', groups: [[planner, scout, analyst], [critic]], writes: rounds },
    { label: 'critic back, alone', groups: [[planner, scout, analyst], [critic]], writes: rounds, before: [{ restart: critic }] },
  ]

  section(`starting ${agents.length} agent processes`)
  for (const agent of await cluster.startAll(agents)) {
    console.log(`  ${agent.id.padEnd(8)} pid ${String(agent.child.pid).padEnd(7)} ${agent.url}  ${relative(process.cwd(), agent.dir) || agent.dir}`)
  }
  console.log('  every agent writes to an OR-set, a counter, a Yjs document and a register; a write counts as')
  console.log('  acknowledged once its agent has fsynced it to its own log (durability "sync")')

  section('schedule: partition, SIGKILL while cut off, restart from disk, heal')
  const result = await runPartitionScenario(cluster, { agents, phases })

  section('summary')
  console.log(`  agents                 ${agents.length} processes, ${agents.length} LevelDB folders, WebSocket links`)
  console.log(`  writes acknowledged    ${result.ackedTotal} (${agents.map((a) => `${a} ${result.ackedBy[a]}`).join(', ')})`)
  console.log(`  final state            ${result.finalFacts} facts on every agent, digest ${Object.values(result.finalDigests)[0]}`)
  const peak = peakDivergence(result)
  console.log(
    `  schedule               ${(result.durationMs / 1000).toFixed(1)} s (phases and final heal; the total below also counts starting and stopping the agents)`,
  )
  console.log(
    `  distinct states        up to ${peak.settled} while partitioned, once each side had settled (${peak.partitioned} at most at once; ${peak.connected} in connected phases: writes or a resync still in flight)`,
  )
  console.log(`  bytes sent             ${bytes(result.bytesTotal)} by all agents`)
  for (const survival of result.survivals)
    console.log(`  after SIGKILL          ${survival.agent}'s folder held ${survival.held}/${survival.acked} of its acknowledged writes`)
  const out = options.out ?? join(options.data, 'report.html')
  await writeFile(
    out,
    renderReport(
      result,
      'Concord — npm start',
      `${agents.length} agent processes with their own LevelDB folders, synced over WebSocket: a partition, a SIGKILL of a cut-off agent, a restart from disk, and a final heal.`,
    ),
  )
  console.log(`  HTML report            ${relative(process.cwd(), out) || out}`)
  return [...result.checks]
})
