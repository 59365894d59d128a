/**
 * One convergence scenario on the seeded simulated network: 3 to 8 peers,
 * every type, random operations and transactions while frames are dropped,
 * duplicated and reordered, the network partitions and heals and peers
 * crash and restart (keeping their replicas: the store-backed restart is
 * the peer's test). After healing, every peer must hold the same values.
 * Everything is drawn from the seed, so a failing seed replays exactly.
 */
import { Network } from '../../../transports/memory/index.ts'
import { ALL_TYPES, makeReplica, mutate } from './memory-host.ts'
import { SimPeer } from './sim.ts'

/** What a scenario did, for the failure message and for assertions. */
export interface ScenarioResult {
  readonly seed: number
  readonly peers: number
  readonly converged: boolean
  readonly values: Record<string, string>
  readonly operations: number
  readonly crashes: number
  readonly partitions: number
  readonly dropped: number
  readonly duplicated: number
  readonly reordered: number
  readonly virtualMs: number
  /** Reconciliations (RANGES) and VERSIONS the sessions started. */
  readonly reconciliations: number
  readonly versionsSent: number
}

/** Variations of a scenario. */
export interface ScenarioOptions {
  /** Names written (default 6). */
  readonly names?: number
  /** Peers that speak as an older version does, without reconciliation (`reconcile: false`). */
  readonly legacy?: (index: number) => boolean
}

/** Runs the scenario for `seed`. */
export async function runScenario(seed: number, options: ScenarioOptions = {}): Promise<ScenarioResult> {
  const network = new Network({ seed, latency: [1, 30], drop: 0.05, duplicate: 0.05, reorder: 0.1 })
  const random = network.random
  const count = random.int(3, 8)
  const sessionOptions = { antiEntropyIntervalMs: 400, resyncTimeoutMs: 150, handshakeTimeoutMs: 300 }
  const peers = Array.from(
    { length: count },
    (_, i) => new SimPeer(network, `p${i}`, {}, { ...sessionOptions, ...(options.legacy?.(i) ? { reconcile: false } : {}) }),
  )
  const nameCount = options.names ?? 6
  const names = Array.from({ length: nameCount }, (_, i) => ({ name: `n${i}`, type: ALL_TYPES[(i + seed) % ALL_TYPES.length] }))
  for (const peer of peers) await peer.listen()

  // ring plus random chords; each link kept alive by the lower-numbered peer
  const edges: Array<[number, number]> = []
  for (let i = 0; i < count; i++) edges.push([i, (i + 1) % count])
  for (let i = 0; i < count; i++) for (let j = i + 2; j < count; j++) if (random.chance(0.25)) edges.push([i, j])
  const links = (peer: number): void => {
    for (const [from, to] of edges) if (from === peer) peers[from].keepConnected(peers[to].name)
  }
  for (let i = 0; i < count; i++) links(i)

  let stop = false
  const tick = (): void => {
    if (stop) return
    for (const peer of peers) if (network.isUp(peer.name)) peer.tick()
    network.schedule(50, tick)
  }
  network.schedule(50, tick)

  // operations
  const operations = random.int(20, 60) + (nameCount > 6 ? 2 * nameCount : 0)
  for (let k = 0; k < operations; k++) {
    network.schedule(random.int(0, 2000), () => {
      const up = peers.filter((p) => network.isUp(p.name))
      if (up.length === 0) return
      const peer = random.pick(up)
      const first = random.pick(names)
      if (random.chance(0.2)) {
        const second = random.pick(names)
        peer.host.transact(() => {
          mutate(peer.host.open(first.name, first.type), random, `${peer.name}.${k}a`)
          mutate(peer.host.open(second.name, second.type), random, `${peer.name}.${k}b`)
        })
      } else {
        mutate(peer.host.open(first.name, first.type), random, `${peer.name}.${k}`)
      }
    })
  }

  // partitions and heals
  const partitions = random.int(0, 2)
  for (let k = 0; k < partitions; k++) {
    const at = random.int(100, 1800)
    network.schedule(at, () => {
      const side = peers.filter(() => random.chance(0.5)).map((p) => p.name)
      network.partition([side, peers.map((p) => p.name).filter((n) => !side.includes(n))])
    })
    network.schedule(at + random.int(50, 500), () => network.heal())
  }

  // crashes and restarts
  const crashes = random.int(0, 2)
  const crashed = new Set<number>()
  const restart = (index: number): void => {
    if (!crashed.has(index)) return
    crashed.delete(index)
    network.restart(peers[index].name)
    void peers[index].listen()
    links(index)
  }
  for (let k = 0; k < crashes; k++) {
    const index = random.int(0, count - 1)
    const at = random.int(100, 1800)
    network.schedule(at, () => {
      if (crashed.has(index)) return
      crashed.add(index)
      for (const reconnector of peers[index].reconnectors.splice(0)) reconnector.stop()
      network.crash(peers[index].name)
    })
    network.schedule(at + random.int(50, 600), () => restart(index))
  }

  await network.run({ maxTime: 2500 })

  // heal everything; the protocol must converge from here on its own
  network.heal()
  network.setFaults({ drop: 0, duplicate: 0, reorder: 0 })
  for (const index of [...crashed]) restart(index)

  // A name whose state is still empty carries nothing and is not announced
  // (deltaSince of an empty version is null): compare without such names.
  const empty = new Map(names.map(({ name, type }) => [name, JSON.stringify(makeReplica(type, 'empty').value())]))
  const meaningful = (values: Record<string, unknown>): Record<string, unknown> =>
    Object.fromEntries(Object.entries(values).filter(([name, value]) => JSON.stringify(value) !== empty.get(name)))
  const snapshot = (): Record<string, string> => Object.fromEntries(peers.map((p) => [p.name, JSON.stringify(meaningful(p.host.values()))]))
  const converged = (): boolean => {
    const values = Object.values(snapshot())
    return values.every((v) => v === values[0])
  }
  let done = false
  const probe = (): void => {
    if (stop) return
    if (converged()) done = true
    else network.schedule(100, probe)
  }
  network.schedule(100, probe)
  await network.run({ until: () => done, maxTime: network.now + 20_000 })
  stop = true
  for (const peer of peers) for (const reconnector of peer.reconnectors) reconnector.stop()
  for (const peer of peers) for (const session of peer.sessions) session.close('end of scenario')

  return {
    seed,
    peers: count,
    converged: converged(),
    values: snapshot(),
    operations,
    crashes,
    partitions,
    dropped: network.stats.dropped,
    duplicated: network.stats.duplicated,
    reordered: network.stats.reordered,
    virtualMs: network.now,
    reconciliations: peers.reduce((sum, peer) => sum + peer.history.reduce((n, session) => n + session.stats.reconciliations, 0), 0),
    versionsSent: peers.reduce((sum, peer) => sum + peer.history.reduce((n, session) => n + session.stats.versionsSent, 0), 0),
  }
}
