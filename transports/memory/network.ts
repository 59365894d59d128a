/**
 * A seeded simulated network: many nodes, each with a {@link MemoryTransport},
 * frames delivered in virtual time through one {@link Scheduler}, with
 * faults drawn from one seeded {@link Prng}: latency, drops, duplicates,
 * reordering, partitions and heals, crash and restart of a node. The same
 * seed and the same calls replay exactly.
 *
 * Time moves only when the test calls {@link Network.step} or
 * {@link Network.run} (or, with `auto: true`, on its own in the background,
 * which is what the transport conformance suite uses).
 */
import { Emitter } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { AbortOptions, Connection, ConnectionEvents, Transport, TransportEvents } from '../transport.ts'
import { Prng } from './prng.ts'
import { Scheduler, type ScheduledEvent } from './scheduler.ts'

/** Fault settings; probabilities are per frame. */
export interface FaultOptions {
  /** One-way latency range in virtual ms (default [1, 10]). */
  readonly latency?: readonly [number, number] | undefined
  /** Probability a frame is lost. */
  readonly drop?: number | undefined
  /** Probability a frame is delivered twice. */
  readonly duplicate?: number | undefined
  /** Probability a frame may overtake the frames sent before it. */
  readonly reorder?: number | undefined
}

/** Options of a {@link Network}. */
export interface NetworkOptions extends FaultOptions {
  /** Seed of every random choice. */
  readonly seed: number
  /** Run events in the background as they are scheduled (default false: the test steps). */
  readonly auto?: boolean | undefined
}

/** Counters of a network. */
export interface NetworkStats {
  sent: number
  delivered: number
  dropped: number
  duplicated: number
  reordered: number
  bytes: number
}

const MEMORY_PREFIX = 'memory://'

/** Timer functions in the network's virtual time (for reconnect helpers and session ticks). */
export interface VirtualTimers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** A simulated network. See the module comment. */
export class Network {
  /** The seeded random source; tests may draw from it too, to stay deterministic. */
  readonly random: Prng
  readonly stats: NetworkStats = { sent: 0, delivered: 0, dropped: 0, duplicated: 0, reordered: 0, bytes: 0 }
  private readonly scheduler = new Scheduler()
  private faults: Required<FaultOptions>
  private readonly nodes = new Map<string, MemoryTransport>()
  private readonly down = new Set<string>()
  private groups: Map<string, number> | undefined
  private readonly auto: boolean
  private autoRunning = false
  private nextConnectionId = 0
  /** Timers in virtual time. */
  readonly timers: VirtualTimers = {
    setTimeout: (callback, ms) => this.schedule(ms, callback),
    clearTimeout: (handle) => {
      if (handle) this.scheduler.cancel(handle as ScheduledEvent)
    },
  }

  constructor(options: NetworkOptions) {
    this.random = new Prng(options.seed)
    this.faults = { latency: options.latency ?? [1, 10], drop: options.drop ?? 0, duplicate: options.duplicate ?? 0, reorder: options.reorder ?? 0 }
    this.auto = options.auto ?? false
  }

  /** Current virtual time in ms. */
  get now(): number {
    return this.scheduler.now
  }

  /** Number of pending events. */
  get pending(): number {
    return this.scheduler.size
  }

  /** The transport of node `name` (created on first use). */
  transport(name: string): MemoryTransport {
    if (name.length === 0 || name.includes('/')) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `bad node name "${name}"`)
    let node = this.nodes.get(name)
    if (!node) {
      node = new MemoryTransport(this, name)
      this.nodes.set(name, node)
    }
    return node
  }

  /** Changes the fault settings from now on. */
  setFaults(faults: FaultOptions): void {
    this.faults = { ...this.faults, ...faults }
  }

  /** Splits the nodes into groups: connections across groups break, dials across fail. Unlisted nodes form their own group. */
  partition(groups: ReadonlyArray<readonly string[]>): void {
    this.groups = new Map()
    groups.forEach((group, index) => group.forEach((node) => this.groups!.set(node, index)))
    for (const node of this.nodes.values()) {
      for (const connection of node.connections()) {
        if (!this.reachable(node.nodeName, connection.remoteNode)) connection.breakLink('partition')
      }
    }
  }

  /** Ends every partition. */
  heal(): void {
    this.groups = undefined
  }

  /** Crashes a node: every connection of it breaks, it accepts and dials nothing until {@link restart}. */
  crash(name: string): void {
    this.down.add(name)
    const node = this.nodes.get(name)
    if (!node) return
    for (const connection of node.connections()) connection.breakLink('crash')
  }

  /** Brings a crashed node back (its listeners must listen again). */
  restart(name: string): void {
    this.down.delete(name)
  }

  /** True unless the node is crashed. */
  isUp(name: string): boolean {
    return !this.down.has(name)
  }

  /** True when `a` and `b` are both up and in the same partition group. */
  reachable(a: string, b: string): boolean {
    if (this.down.has(a) || this.down.has(b)) return false
    if (!this.groups) return true
    return (this.groups.get(a) ?? `solo:${a}`) === (this.groups.get(b) ?? `solo:${b}`)
  }

  /** Runs `run` after `delay` virtual ms. */
  schedule(delay: number, run: () => void): ScheduledEvent {
    const event = this.scheduler.schedule(delay, run)
    if (this.auto && !this.autoRunning) void this.autoRun()
    return event
  }

  /** Runs the next event; false when nothing is pending. Call {@link settle} after it to let promises run. */
  step(): boolean {
    return this.scheduler.step()
  }

  /**
   * Runs events (letting promise chains settle after each) until none is
   * pending, `until()` is true, virtual time passes `maxTime`, or
   * `maxSteps` events ran. Returns the number of events run.
   */
  async run(options: { until?: () => boolean; maxTime?: number; maxSteps?: number } = {}): Promise<number> {
    const maxSteps = options.maxSteps ?? 1_000_000
    let steps = 0
    await settle()
    while (steps < maxSteps) {
      if (options.until?.()) break
      const next = this.scheduler.peekTime()
      if (next === undefined) break
      if (options.maxTime !== undefined && next > options.maxTime) {
        this.scheduler.now = Math.max(this.scheduler.now, options.maxTime)
        break
      }
      this.scheduler.step()
      steps++
      await settle()
    }
    return steps
  }

  private async autoRun(): Promise<void> {
    this.autoRunning = true
    try {
      for (;;) {
        await settle()
        if (!this.scheduler.step()) break
      }
    } finally {
      this.autoRunning = false
    }
  }

  /** @internal a new connection id. */
  connectionId(from: string, to: string): string {
    return `${from}->${to}#${++this.nextConnectionId}`
  }

  /** @internal the current fault settings. */
  get faultSettings(): Required<FaultOptions> {
    return this.faults
  }

  /** @internal looks up a node transport by name. */
  node(name: string): MemoryTransport | undefined {
    return this.nodes.get(name)
  }

  /** @internal one latency draw. */
  latency(): number {
    const [min, max] = this.faults.latency
    return this.random.int(min, max)
  }
}

/** Lets every pending promise continuation run (one macrotask turn). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/** Parses `memory://name` or `name`. */
function nodeOf(address: string): string {
  return address.startsWith(MEMORY_PREFIX) ? address.slice(MEMORY_PREFIX.length) : address
}

/** The transport of one simulated node. Addresses are `memory://<node>`. */
export class MemoryTransport implements Transport {
  readonly name = 'memory'
  readonly events = new Emitter<TransportEvents>()
  private listening = false
  private readonly open = new Set<MemoryConnection>()

  constructor(
    private readonly network: Network,
    readonly nodeName: string,
  ) {}

  /** @internal open connections of this node. */
  connections(): MemoryConnection[] {
    return [...this.open]
  }

  /** @internal */
  forget(connection: MemoryConnection): void {
    this.open.delete(connection)
  }

  /** @internal */
  get accepting(): boolean {
    return this.listening
  }

  /** Accepts connections at `memory://<node>` (the address argument is ignored). */
  async listen(_address?: unknown, options: AbortOptions = {}): Promise<string> {
    if (options.signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'aborted')
    this.listening = true
    return MEMORY_PREFIX + this.nodeName
  }

  /** Opens a connection to `memory://<node>`; takes one latency; fails if unreachable or not listening. */
  dial(address: string, options: AbortOptions = {}): Promise<Connection> {
    const target = nodeOf(address)
    const network = this.network
    return new Promise<Connection>((resolve, reject) => {
      if (options.signal?.aborted) return reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      const onAbort = (): void => {
        network.timers.clearTimeout(event)
        reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      }
      options.signal?.addEventListener('abort', onAbort, { once: true })
      const event = network.schedule(network.latency() * 2, () => {
        options.signal?.removeEventListener('abort', onAbort)
        const remote = network.node(target)
        if (!remote?.accepting || !network.reachable(this.nodeName, target)) {
          reject(new ConcordError(ErrorCodes.UNREACHABLE, `memory: ${target} is unreachable from ${this.nodeName}`))
          return
        }
        const outbound = new MemoryConnection(network, this, target, 'outbound', network.connectionId(this.nodeName, target))
        const inbound = new MemoryConnection(network, remote, this.nodeName, 'inbound', network.connectionId(target, this.nodeName))
        outbound.peer = inbound
        inbound.peer = outbound
        this.open.add(outbound)
        remote.open.add(inbound)
        remote.events.emit('connection', inbound)
        resolve(outbound)
      })
    })
  }

  /** Stops listening and closes every connection of this node. */
  async stop(): Promise<void> {
    this.listening = false
    for (const connection of this.connections()) connection.close('transport stopped')
  }
}

/** One end of a simulated connection. */
export class MemoryConnection implements Connection {
  readonly events = new Emitter<ConnectionEvents>()
  /** @internal the other end. */
  peer!: MemoryConnection
  private isOpen = true
  /** Delivery time of the last in-order frame on this direction (keeps FIFO). */
  private lastDelivery = 0

  constructor(
    private readonly network: Network,
    private readonly owner: MemoryTransport,
    readonly remoteNode: string,
    readonly direction: 'inbound' | 'outbound',
    readonly id: string,
  ) {}

  get remoteAddress(): string {
    return MEMORY_PREFIX + this.remoteNode
  }

  get open(): boolean {
    return this.isOpen
  }

  send(frame: Uint8Array): Promise<void> {
    if (!this.isOpen) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, `connection ${this.id} is closed`))
    if (!(frame instanceof Uint8Array)) return Promise.reject(new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a frame is a Uint8Array'))
    const network = this.network
    const faults = network.faultSettings
    const copy = frame.slice()
    network.stats.sent++
    network.stats.bytes += copy.length
    if (this.broken || network.random.chance(faults.drop)) {
      network.stats.dropped++
      return Promise.resolve()
    }
    const copies = network.random.chance(faults.duplicate) ? 2 : 1
    if (copies === 2) network.stats.duplicated++
    for (let i = 0; i < copies; i++) {
      let delay = network.latency()
      if (network.random.chance(faults.reorder)) {
        network.stats.reordered++
      } else {
        const at = Math.max(network.now + delay, this.lastDelivery)
        this.lastDelivery = at
        delay = at - network.now
      }
      network.schedule(delay, () => this.peer.deliver(copy))
    }
    return Promise.resolve()
  }

  /** @internal a frame arrives at this end. */
  deliver(frame: Uint8Array): void {
    if (!this.isOpen || this.broken) return
    this.network.stats.delivered++
    this.events.emit('message', frame)
  }

  close(reason?: string): void {
    if (!this.isOpen) return
    this.ended(reason)
    // The remote end sees the close after the frames already in flight.
    const at = Math.max(this.network.now + this.network.latency(), this.lastDelivery)
    this.network.schedule(at - this.network.now, () => this.peer.ended(reason ?? 'closed by remote'))
  }

  /** @internal both ends break (partition, crash): frames in flight are lost; each side sees a close after a latency. */
  breakLink(reason: string): void {
    for (const end of [this, this.peer]) {
      end.broken = true
      if (end.isOpen) this.network.schedule(this.network.latency(), () => end.ended(reason))
    }
  }

  private broken = false

  /** @internal */
  ended(reason?: string): void {
    if (!this.isOpen) return
    this.isOpen = false
    this.owner.forget(this)
    this.events.emit('close', { reason })
  }

  /** @internal true once a partition or crash cut the link. */
  get isBroken(): boolean {
    return this.broken
  }
}
