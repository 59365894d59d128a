/**
 * Convergence of real peers (`createPeer`: store + sync sessions) on the
 * seeded simulated network. 3 to 8 peers, each over a storage that survives
 * its crashes (a FaultStorage over memory-level: a crash is a power cut that
 * keeps what was written in `sync` mode up to the last fsync and, in `async`
 * mode, everything written, as a process crash does), every type, random
 * operations and transactions while frames are dropped, duplicated and
 * reordered, the network partitions and heals and peers crash and restart
 * from their storage. After the final heal every peer must hold the same
 * values and versions of every name, and keep them across one more
 * crash-restart.
 *
 * Determinism: the network, the operations, the faults, the Yjs client ids,
 * the Automerge actors, the HLC (virtual `now`) and the session ticks
 * (`tickMs: 0`, ticked in virtual time) all come from the seed; async steps
 * (opening a peer, a crash) run between network steps. What is not driven:
 * the store's background sweep (a real 10 s timer; a scenario lasts far
 * less) and the async-mode fsync timer (it only moves data between the
 * FaultStorage's two engines, which a crash that keeps everything written
 * makes irrelevant).
 */
import { createReplica } from '../../../crdt/registry.ts'
import type { Replica, ReplicaOptions, ReplicaType } from '../../../crdt/replica.ts'
import type { Peer } from '../../../peer/index.ts'
import { createTestPeer } from '../../../testing/index.ts'
import { FaultStorage } from '../../../persistence/storage/fault-storage.ts'
import type { Durability } from '../../../persistence/options.ts'
import { Network, Prng } from '../../../transports/memory/index.ts'
import { Reconnector } from '../../../transports/reconnect.ts'
import { firstDifference } from './compare.ts'
import { mutate } from '../../sync/helpers/memory-host.ts'

export { mutate }

/** One name per type: every type in every scenario. */
export const NAMES: ReadonlyArray<{ readonly name: string; readonly type: ReplicaType }> = [
  { name: 'counter', type: 'pncounter' },
  { name: 'gcounter', type: 'gcounter' },
  { name: 'set', type: 'orset' },
  { name: 'gset', type: 'gset' },
  { name: 'register', type: 'lww-register' },
  { name: 'mv', type: 'mv-register' },
  { name: 'map', type: 'ormap' },
  { name: 'flag', type: 'ewflag' },
  { name: 'text', type: 'yjs' },
  { name: 'doc', type: 'automerge' },
]

/** What a scenario did, for the failure message and for replay checks. */
export interface PeerScenarioResult {
  readonly seed: number
  readonly peers: number
  readonly converged: boolean
  /** Values and versions equal again after every peer restarted from its storage at the end. */
  readonly durable: boolean
  /** Peer -> name -> JSON value. */
  readonly values: Record<string, Record<string, string>>
  /** Why it did not converge, or was not the same after the final restart (first difference). */
  readonly difference?: string
  readonly operations: number
  readonly transactions: number
  readonly crashes: number
  readonly partitions: number
  readonly dropped: number
  readonly duplicated: number
  readonly reordered: number
  readonly commitsIn: number
  readonly virtualMs: number
}

interface Slot {
  readonly name: string
  readonly durability: Durability
  storage: FaultStorage
  peer: Peer | undefined
  replicas: Map<string, Replica>
  reconnectors: Reconnector[]
  commitsIn: number
}

/** Runs the scenario for `seed`. */
export async function runPeerScenario(seed: number): Promise<PeerScenarioResult> {
  const network = new Network({ seed, latency: [1, 30], drop: 0.05, duplicate: 0.05, reorder: 0.1 })
  const random = network.random
  // Ids of Yjs clients and Automerge actors: from the seed too, a fresh one per replica object.
  const ids = new Prng(seed ^ 0x5eed)
  const creator = (type: ReplicaType, options: ReplicaOptions): Replica => {
    if (type === 'yjs') return createReplica(type, { ...options, clientId: ids.int(1, 2 ** 31) } as ReplicaOptions)
    if (type === 'automerge') {
      const actor = Array.from({ length: 16 }, () => ids.int(0, 255).toString(16).padStart(2, '0')).join('')
      return createReplica(type, { ...options, actor } as ReplicaOptions)
    }
    return createReplica(type, options)
  }

  const count = random.int(3, 8)
  const slots: Slot[] = []
  for (let i = 0; i < count; i++) {
    const durability: Durability = random.chance(0.5) ? { mode: 'sync' } : { mode: 'async', rpoMs: 50 }
    slots.push({ name: `p${i}`, durability, storage: await FaultStorage.create(), peer: undefined, replicas: new Map(), reconnectors: [], commitsIn: 0 })
  }

  const start = async (slot: Slot): Promise<void> => {
    const peer = await createTestPeer({
      agentId: slot.name,
      storage: slot.storage,
      durability: slot.durability,
      createReplica: creator,
      tickMs: 0,
      now: () => Math.floor(network.now),
      // Every third peer speaks without INDEPENDENT bundles, as an older version (no extra draw: seeds replay as before).
      sync: {
        now: () => network.now,
        antiEntropyIntervalMs: 400,
        resyncTimeoutMs: 150,
        handshakeTimeoutMs: 300,
        independent: slots.indexOf(slot) % 3 !== 2,
      },
    })
    peer.events.on('error', () => {
      /* storage cut under a crashing peer */
    })
    slot.replicas = new Map()
    for (const { name, type } of NAMES) slot.replicas.set(name, await peer.open(name, type))
    slot.peer = peer
    await network.transport(slot.name).listen()
    for (const [from, to] of edges) if (from === slots.indexOf(slot)) keepConnected(slot, slots[to].name)
  }

  const keepConnected = (slot: Slot, other: string): void => {
    const reconnector = new Reconnector({
      transport: network.transport(slot.name),
      address: `memory://${other}`,
      backoff: { initialMs: 20, maxMs: 400 },
      random: () => random.next(),
      timers: network.timers,
      now: () => network.now,
      stableMs: 200,
    })
    reconnector.events.on('connection', (connection) => {
      if (slot.peer) slot.peer.attach(connection)
      else connection.close('peer down')
    })
    slot.reconnectors.push(reconnector)
    reconnector.start()
  }

  for (const slot of slots) {
    network.transport(slot.name).events.on('connection', (connection) => {
      if (slot.peer) slot.peer.attach(connection)
      else connection.close('peer down')
    })
  }

  /** A crash: links break, the peer object is dropped, its storage keeps what a crash keeps. */
  const crash = async (slot: Slot): Promise<void> => {
    const peer = slot.peer
    if (!peer) return
    slot.peer = undefined
    for (const reconnector of slot.reconnectors.splice(0)) reconnector.stop()
    network.crash(slot.name)
    slot.commitsIn += peer.stats().totals.commitsIn
    const keep = slot.durability.mode === 'sync' ? random.int(0, slot.storage.unsyncedBatches) : slot.storage.unsyncedBatches
    slot.storage = await slot.storage.powerCut({ keep })
    await peer.close().catch(() => undefined)
  }

  const restart = async (slot: Slot): Promise<void> => {
    if (slot.peer) return
    network.restart(slot.name)
    await start(slot)
  }

  // ring plus random chords; each link kept alive by the lower-numbered peer
  const edges: Array<[number, number]> = []
  for (let i = 0; i < count; i++) edges.push([i, (i + 1) % count])
  for (let i = 0; i < count; i++) for (let j = i + 2; j < count; j++) if (random.chance(0.25)) edges.push([i, j])
  for (const slot of slots) await start(slot)

  let stop = false
  const tick = (): void => {
    if (stop) return
    for (const slot of slots) slot.peer?.tick(network.now)
    network.schedule(50, tick)
  }
  network.schedule(50, tick)

  // operations, drawn when they run
  const operations = random.int(30, 80)
  let transactions = 0
  for (let k = 0; k < operations; k++) {
    network.schedule(random.int(0, 2000), () => {
      const up = slots.filter((s) => s.peer)
      if (up.length === 0) return
      const slot = random.pick(up)
      const peer = slot.peer!
      if (random.chance(0.25)) {
        transactions++
        const touched = NAMES.filter(() => random.chance(0.3))
        void peer
          .transact(() => {
            for (const { name } of touched) {
              mutate(slot.replicas.get(name)!, random, `${slot.name}.${k}.${name}`)
              // sometimes the same name twice in one transaction
              if (random.chance(0.2)) mutate(slot.replicas.get(name)!, random, `${slot.name}.${k}.${name}.again`)
            }
          })
          .catch(() => undefined)
      } else {
        const { name } = random.pick(NAMES)
        mutate(slot.replicas.get(name)!, random, `${slot.name}.${k}`)
      }
    })
  }

  // partitions and heals
  const partitions = random.int(0, 2)
  for (let k = 0; k < partitions; k++) {
    const at = random.int(100, 1800)
    network.schedule(at, () => {
      const side = slots.filter(() => random.chance(0.5)).map((s) => s.name)
      network.partition([side, slots.map((s) => s.name).filter((n) => !side.includes(n))])
    })
    network.schedule(at + random.int(50, 500), () => network.heal())
  }

  // crashes and restarts: async, so they run between network steps
  const crashes = random.int(0, 3)
  const plan: Array<{ at: number; run: () => Promise<void> }> = []
  for (let k = 0; k < crashes; k++) {
    const slot = slots[random.int(0, count - 1)]
    const at = random.int(100, 1800)
    plan.push({ at, run: () => crash(slot) })
    plan.push({ at: at + random.int(50, 600), run: () => restart(slot) })
  }
  plan.sort((a, b) => a.at - b.at)
  for (const step of plan) {
    await network.run({ maxTime: step.at })
    await step.run()
  }
  await network.run({ maxTime: 2500 })

  // heal everything; the protocol must converge from here on its own
  network.heal()
  network.setFaults({ drop: 0, duplicate: 0, reorder: 0 })
  for (const slot of slots) await restart(slot)

  let difference: string | undefined = 'not checked'
  let done = false
  const probe = (): void => {
    if (stop) return
    difference = compare(slots)
    if (difference === undefined) done = true
    else network.schedule(100, probe)
  }
  network.schedule(100, probe)
  await network.run({ until: () => done, maxTime: network.now + 20_000 })
  const converged = difference === undefined
  const values = snapshot(slots)

  // Everything each peer holds is persisted: crash every peer once more, restart, compare.
  for (const slot of slots) await slot.peer!.flush()
  for (const slot of slots) await crash(slot)
  for (const slot of slots) {
    network.restart(slot.name)
    slot.peer = await createTestPeer({ agentId: slot.name, storage: slot.storage, createReplica: creator, tickMs: 0, now: () => Math.floor(network.now) })
    slot.replicas = new Map()
    for (const { name, type } of NAMES) slot.replicas.set(name, await slot.peer.open(name, type))
  }
  const reopened = snapshot(slots)
  let durableDifference = compare(slots)
  for (const slot of slots) {
    for (const { name } of NAMES) {
      const [before, after] = [values[slot.name][name], reopened[slot.name][name]]
      if (before !== after) durableDifference ??= `${slot.name} ${name}: ${before} before the restart, ${after} after`
    }
  }
  const durable = durableDifference === undefined

  stop = true
  let commitsIn = 0
  for (const slot of slots) {
    commitsIn += slot.commitsIn + slot.peer!.stats().totals.commitsIn
    for (const reconnector of slot.reconnectors) reconnector.stop()
    await slot.peer!.close()
    await slot.storage.close()
  }
  return {
    seed,
    peers: count,
    converged,
    durable,
    values,
    difference: converged ? durableDifference : difference,
    operations,
    transactions,
    crashes,
    partitions,
    dropped: network.stats.dropped,
    duplicated: network.stats.duplicated,
    reordered: network.stats.reordered,
    commitsIn,
    virtualMs: network.now,
  }
}

/** Peer -> name -> JSON value. */
function snapshot(slots: readonly Slot[]): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {}
  for (const slot of slots) {
    out[slot.name] = {}
    for (const { name } of NAMES) out[slot.name][name] = JSON.stringify(slot.replicas.get(name)?.value())
  }
  return out
}

/** The first difference of value or version between the peers, or undefined when all are equal. */
function compare(slots: readonly Slot[]): string | undefined {
  const down = slots.find((slot) => !slot.peer)
  if (down) return `${down.name} is down`
  return firstDifference(slots.map((slot) => ({ name: slot.name, replicas: slot.replicas })))
}
