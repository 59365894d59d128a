/**
 * Demo 3, partitions: N agent processes under a schedule of partitions and
 * heals (WebSocket links cut and restored), with concurrent acknowledged
 * writes on every side, then a final heal. Verifies convergence and that no
 * acknowledged write was lost, and writes an HTML report (timeline,
 * divergence over time, bytes exchanged).
 *
 *   npm run demo:partitions [-- --short] [--out report.html]
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { bytes, runDemo, section } from './lib/demo-runner.ts'
import { peakDivergence, runPartitionScenario, type Phase } from './lib/partition-scenario.ts'
import { renderReport } from './lib/report.ts'

await runDemo('demo-partitions', 'Demo 3 — partitions: concurrent writes on every side, heals, convergence', async (cluster, options) => {
  const agents = options.short ? ['a', 'b', 'c'] : ['a', 'b', 'c', 'd', 'e']
  const [a, b, c, d, e] = agents
  const phases: Phase[] = options.short
    ? [
        { label: 'connected', groups: [agents], writes: 2 },
        { label: 'split 2|1', groups: [[a, b], [c]], writes: 4 },
        { label: 'split 1|2', groups: [[a], [b, c]], writes: 4 },
      ]
    : [
        { label: 'connected', groups: [agents], writes: 3 },
        {
          label: 'split 3|2',
          groups: [
            [a, b, c],
            [d, e],
          ],
          writes: 6,
        },
        { label: 'healed', groups: [agents], writes: 3 },
        { label: 'split 2|2|1', groups: [[a, d], [b, e], [c]], writes: 6 },
        { label: 'isolated', groups: agents.map((id) => [id]), writes: 4 },
        { label: 'split 4|1', groups: [[a, b, c, d], [e]], writes: 4 },
      ]

  section(`starting ${agents.length} agent processes (each its own LevelDB folder, WebSocket)`)
  for (const agent of await cluster.startAll(agents)) console.log(`  ${agent.id}  pid ${agent.child.pid}  ${agent.url}`)

  section('schedule')
  const result = await runPartitionScenario(cluster, { agents, phases })

  section('result')
  console.log(`  ${result.ackedTotal} acknowledged writes, ${result.finalFacts} facts in the final state on every agent`)
  const peak = peakDivergence(result)
  console.log(
    `  schedule took ${(result.durationMs / 1000).toFixed(1)} s (the phases and the final heal; the total below also counts starting and stopping the agents)`,
  )
  console.log(`  distinct states while partitioned, once each side had settled: up to ${peak.settled}`)
  console.log(
    `  most distinct states at once: ${peak.partitioned} while partitioned, ${peak.connected} in connected phases (writes, or the resync after a heal, still in flight)`,
  )
  console.log(`  bytes sent by all agents: ${bytes(result.bytesTotal)}`)
  const out = options.out ?? join(options.data, 'report.html')
  await writeFile(
    out,
    renderReport(
      result,
      'Concord — partitions demo',
      `${agents.length} agent processes, each with its own LevelDB folder, synced over WebSocket, under a schedule of partitions and heals with concurrent writes on every side.`,
    ),
  )
  console.log(`  HTML report: ${out}`)
  return [...result.checks]
})
