/**
 * The partition scenario engine of demo 3 and of `npm start`: N agent
 * processes under a schedule of partitions and heals (cut and restored
 * WebSocket links), with concurrent acknowledged writes on every side,
 * optional SIGKILLs and restarts from disk, then a final heal. A sampler
 * records the divergence (number of distinct states among live agents) and
 * the bytes sent over time for the HTML report.
 *
 * A write is acknowledged when its agent answered it: after
 * `peer.transact()` resolved, i.e. fsynced to its log (sync durability).
 * Each write atomically adds one fact, increments the counter, appends one
 * log entry to a Yjs document and sets the register, so the final state
 * must hold every acknowledged fact, and the counter and log must equal the
 * number of facts.
 */
import type { Cluster } from './cluster.ts'
import type { Digest } from './protocol.ts'
import { poll, type Check } from './demo-runner.ts'

/** Something that happens to one agent. */
export type ScenarioEvent = { readonly kill: string } | { readonly restart: string }

/** One phase of the schedule. */
export interface Phase {
  readonly label: string
  /** Who can reach whom: agents in the same group are linked. */
  readonly groups: readonly (readonly string[])[]
  /** Rounds of concurrent writes (one per live agent per round). */
  readonly writes: number
  /** Events before the writes. */
  readonly before?: readonly ScenarioEvent[]
  /** Events after the writes. */
  readonly after?: readonly ScenarioEvent[]
}

/** A phase as it ran. */
export interface PhaseRecord {
  readonly label: string
  readonly groups: readonly (readonly string[])[]
  readonly start: number
  end: number
  acked: number
  /** Each group converged within itself before the phase ended. */
  settled: boolean
  /** Distinct states among live agents once each side had settled: what the partition itself kept apart. */
  settledDistinct: number
}

/** One sample of the sampler. */
export interface Sample {
  /** ms since the scenario started. */
  readonly t: number
  /** Distinct states among live agents (in a connected phase, above 1 only while writes are in flight). */
  readonly distinct: number
  /** Index of the phase running when the sample was taken (-1 before the first). */
  readonly phase: number
  readonly live: number
  /** Bytes sent by every agent so far (all incarnations). */
  readonly bytes: number
}

/** A kill, restart or note on the timeline. */
export interface TimelineEvent {
  readonly t: number
  readonly agent: string
  readonly kind: 'kill' | 'restart'
  readonly note: string
}

/** Everything the scenario observed and concluded. */
export interface ScenarioResult {
  readonly agents: readonly string[]
  readonly phases: readonly PhaseRecord[]
  readonly samples: readonly Sample[]
  readonly events: readonly TimelineEvent[]
  readonly ackedTotal: number
  readonly ackedBy: Readonly<Record<string, number>>
  readonly missing: readonly string[]
  readonly finalDigests: Readonly<Record<string, string>>
  readonly finalFacts: number
  readonly bytesTotal: number
  readonly durationMs: number
  /** Restarted agents: how many of their own acknowledged writes their folder held right after the restart. */
  readonly survivals: ReadonlyArray<{ agent: string; acked: number; held: number; isolated: boolean }>
  readonly checks: readonly Check[]
}

/**
 * Whether the partitions kept the agents apart, counted where only a
 * partition can: once each side had settled (its agents agree), the number
 * of distinct states left. A sample taken mid-phase also counts writes still
 * in flight, in a connected phase too, so it proves nothing about partitions.
 */
export function divergenceCheck(phases: readonly PhaseRecord[]): Check {
  const partitioned = phases.filter((phase) => phase.groups.length > 1)
  if (partitioned.length === 0) return { ok: true, what: 'no partition in the schedule (nothing to diverge)' }
  const widest = partitioned.reduce((best, phase) => (phase.settledDistinct > best.settledDistinct ? phase : best))
  return {
    ok: widest.settledDistinct > 1,
    what: `the partitions really diverged the agents: once each side had settled, up to ${widest.settledDistinct} distinct states remained ("${widest.label}", ${widest.groups.length} sides)`,
  }
}

/** The most distinct states at once, while partitioned and in connected phases (where more than 1 means writes, or the resync after a heal, in flight). */
export function peakDivergence(result: Pick<ScenarioResult, 'samples' | 'phases'>): { partitioned: number; connected: number; settled: number } {
  const partitioned = (phase: number) => (result.phases[phase]?.groups.length ?? 1) > 1
  const peak = (keep: (phase: number) => boolean) => Math.max(0, ...result.samples.filter((s) => keep(s.phase)).map((s) => s.distinct))
  return {
    partitioned: peak(partitioned),
    connected: peak((phase) => !partitioned(phase)),
    settled: Math.max(0, ...result.phases.filter((p) => p.groups.length > 1).map((p) => p.settledDistinct)),
  }
}

/** Options of {@link runPartitionScenario}. */
export interface ScenarioOptions {
  readonly agents: readonly string[]
  readonly phases: readonly Phase[]
  /** Sampling period, ms (default 50). */
  readonly sampleMs?: number
  /** Pace of the writes: a round of writes starts every `roundMs` (default 120). */
  readonly roundMs?: number
  /** Time a phase lasts after it settled, so the charts show it (default 150). */
  readonly holdMs?: number
  /** Max wait for convergence at the end of a phase and at the end, ms. */
  readonly settleMs?: number
  readonly log?: (line: string) => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs the schedule on already started agents of `cluster`, then heals everything and verifies. */
export async function runPartitionScenario(cluster: Cluster, options: ScenarioOptions): Promise<ScenarioResult> {
  const { agents } = options
  const log = options.log ?? ((line: string) => console.log(line))
  const settleMs = options.settleMs ?? 15_000
  const t0 = Date.now()
  const now = () => Date.now() - t0
  const acked = new Map<string, string[]>(agents.map((id) => [id, []]))
  const survivals: Array<{ agent: string; acked: number; held: number; isolated: boolean }> = []
  const events: TimelineEvent[] = []
  const phases: PhaseRecord[] = []
  const samples: Sample[] = []
  const bytesBase = new Map<string, number>(agents.map((id) => [id, 0]))
  const bytesLast = new Map<string, number>(agents.map((id) => [id, 0]))
  let groups: readonly (readonly string[])[] = [agents]
  let counter = 0

  const groupOf = (id: string) => groups.find((group) => group.includes(id)) ?? [id]
  const linksOf = (id: string) => {
    const index = agents.indexOf(id)
    return groupOf(id)
      .filter((other) => agents.indexOf(other) < index)
      .map((other) => cluster.agent(other).url)
  }
  const applyLinks = async (refreshFor?: string) => {
    await Promise.all(
      cluster.live().map((id) => {
        const refresh =
          refreshFor !== undefined && groupOf(id).includes(refreshFor) && agents.indexOf(refreshFor) < agents.indexOf(id) ? [cluster.agent(refreshFor).url] : []
        return cluster.request(id, 'links', { urls: linksOf(id), refresh }).catch(() => undefined)
      }),
    )
  }
  const digests = async (): Promise<Map<string, Digest>> => {
    const out = new Map<string, Digest>()
    await Promise.all(
      cluster.live().map(async (id) => {
        try {
          out.set(id, await cluster.request(id, 'digest', {}, 5_000))
        } catch {
          /* died meanwhile */
        }
      }),
    )
    return out
  }
  const groupsConverged = (found: Map<string, Digest>) =>
    groups.every((group) => {
      const states = group.filter((id) => found.has(id)).map((id) => found.get(id)!.digest)
      return new Set(states).size <= 1
    })

  // The sampler: divergence and bytes over time.
  let sampling = true
  const sampleOnce = async () => {
    const live = cluster.live()
    const found = await digests()
    await Promise.all(
      live.map(async (id) => {
        const incarnation = cluster.agent(id).incarnation
        try {
          const stats = await cluster.request(id, 'stats', {}, 5_000)
          // A reply from a process killed meanwhile is already counted in bytesBase.
          if (cluster.agent(id).alive && cluster.agent(id).incarnation === incarnation) bytesLast.set(id, stats.bytesOut)
        } catch {
          /* died meanwhile */
        }
      }),
    )
    const bytes = agents.reduce((sum, id) => sum + bytesBase.get(id)! + bytesLast.get(id)!, 0)
    samples.push({ t: now(), distinct: new Set([...found.values()].map((d) => d.digest)).size, live: found.size, bytes, phase: phases.length - 1 })
  }
  await sampleOnce()
  const sampler = (async () => {
    while (sampling) {
      await sleep(options.sampleMs ?? 50)
      await sampleOnce()
    }
  })()

  const runEvent = async (event: ScenarioEvent) => {
    if ('kill' in event) {
      const id = event.kill
      await cluster.kill(id)
      bytesBase.set(id, bytesBase.get(id)! + bytesLast.get(id)!)
      bytesLast.set(id, 0)
      events.push({
        t: now(),
        agent: id,
        kind: 'kill',
        note: `SIGKILL ${id} (pid ${cluster.agent(id).child.pid}) after ${acked.get(id)!.length} acknowledged writes`,
      })
      log(`  ✕ SIGKILL ${id}: ${acked.get(id)!.length} of its writes were acknowledged`)
    } else {
      const id = event.restart
      const agent = await cluster.start(id)
      const state = await cluster.request(id, 'state', {})
      const mine = acked.get(id)!
      const facts = new Set(state.facts)
      const held = mine.filter((fact) => facts.has(fact)).length
      const isolated = groupOf(id).length === 1
      survivals.push({ agent: id, acked: mine.length, held, isolated })
      events.push({
        t: now(),
        agent: id,
        kind: 'restart',
        note: `${id} restarted from its folder in ${agent.startupMs} ms: ${held}/${mine.length} acknowledged writes there`,
      })
      log(
        `  ↻ ${id} restarted from ${agent.dir} (incarnation ${agent.incarnation}, ready in ${agent.startupMs} ms): ` +
          `its folder holds ${held} of its ${mine.length} acknowledged writes${isolated ? ' (it is isolated: nobody else could have given them back)' : ''}`,
      )
      await applyLinks(id)
    }
  }

  const runPhase = async (phase: Phase, final: boolean) => {
    const record: PhaseRecord = { label: phase.label, groups: phase.groups, start: now(), end: 0, acked: 0, settled: false, settledDistinct: 0 }
    phases.push(record)
    groups = phase.groups
    log(`\n-- ${phase.label}: ${phase.groups.map((g) => `{${g.join(', ')}}`).join(' | ')}`)
    await applyLinks()
    for (const event of phase.before ?? []) await runEvent(event)
    for (let round = 0; round < phase.writes; round++) {
      const pace = sleep(options.roundMs ?? 120)
      await Promise.all(
        cluster.live().map(async (id) => {
          const fact = `${id}:${++counter}`
          try {
            const { acked: done } = await cluster.request(id, 'write', { ids: [fact] })
            acked.get(id)!.push(...done)
            record.acked += done.length
          } catch {
            /* not acknowledged: it does not count */
          }
        }),
      )
      await pace
    }
    if (phase.writes > 0) log(`   ${record.acked} writes acknowledged (${cluster.live().length} live agents, ${phase.writes} round(s) each)`)
    for (const event of phase.after ?? []) await runEvent(event)
    const settled = await poll(digests, (found) => (final ? new Set([...found.values()].map((d) => d.digest)).size === 1 : groupsConverged(found)), settleMs)
    record.settled = settled.ok
    await sleep(options.holdMs ?? 150)
    record.end = now()
    const distinct = new Set([...settled.value.values()].map((d) => d.digest)).size
    record.settledDistinct = distinct
    log(`   ${settled.ok ? 'settled' : 'NOT settled'}: ${distinct} distinct state(s) among ${settled.value.size} live agents`)
  }

  try {
    for (const phase of options.phases) await runPhase(phase, false)
    await runPhase(
      { label: 'final heal', groups: [agents], writes: 0, before: agents.filter((id) => !cluster.agent(id).alive).map((id) => ({ restart: id })) },
      true,
    )
  } finally {
    sampling = false
    await sampler
  }

  // Verification on the final state of every agent.
  const finals = new Map<string, { facts: string[]; writes: number; log: number }>()
  for (const id of agents) finals.set(id, await cluster.request(id, 'state', {}))
  const finalDigests = Object.fromEntries([...(await digests())].map(([id, d]) => [id, d.digest]))
  const allAcked = [...acked.values()].flat()
  const missing = new Set<string>()
  for (const state of finals.values()) {
    const facts = new Set(state.facts)
    for (const fact of allAcked) if (!facts.has(fact)) missing.add(fact)
  }
  const reference = finals.get(agents[0])!
  const consistent = [...finals.values()].every((state) => state.writes === state.facts.length && state.log === state.facts.length)
  const bytesTotal = samples.at(-1)?.bytes ?? 0
  const checks: Check[] = [
    {
      ok: new Set(Object.values(finalDigests)).size === 1 && Object.keys(finalDigests).length === agents.length,
      what: `after the final heal all ${agents.length} agents hold the same state`,
    },
    { ok: missing.size === 0, what: `no acknowledged write lost: ${allAcked.length - missing.size}/${allAcked.length} on every agent` },
    { ok: consistent, what: `each write applied atomically: counter = log entries = facts (${reference.facts.length}) on every agent` },
    { ok: phases.every((phase) => phase.settled), what: 'every side converged within itself during each partition' },
    {
      ok: survivals.every((s) => s.held === s.acked),
      what:
        survivals.length === 0
          ? 'no agent was killed'
          : `every killed agent's folder held all its acknowledged writes after SIGKILL (${survivals.map((s) => `${s.agent}: ${s.held}/${s.acked}`).join(', ')})`,
    },
    divergenceCheck(phases),
  ]
  return {
    agents,
    phases,
    samples,
    events,
    ackedTotal: allAcked.length,
    ackedBy: Object.fromEntries([...acked].map(([id, list]) => [id, list.length])),
    missing: [...missing],
    finalDigests,
    finalFacts: reference.facts.length,
    bytesTotal,
    durationMs: Math.max(phases.at(-1)?.end ?? 0, samples.at(-1)?.t ?? 0),
    survivals,
    checks,
  }
}
