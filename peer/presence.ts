/**
 * A peer's presence table: what each agent says it is working on, for a
 * while (its TTL), visible to every peer and never persisted.
 *
 * Entries travel in PRESENCE messages over the sync sessions
 * (sync/presence.ts, sync/PROTOCOL.md "Presence"): a local agent's entry
 * (set through {@link Presence.set}, e.g. by the MCP server for its
 * client) goes to every session; an entry received from one session is
 * kept if it is newer than what this peer holds (its agent's clock) and
 * relayed to every other session, so presence crosses hubs; an older or
 * equal one stops there (no loops). A session that opens gets the whole
 * table. An entry about a name goes only to peers that may read the name.
 *
 * Bounded: at most {@link PRESENCE_TABLE_LIMITS.maxEntries} agents (and
 * `maxPerPeer` reported by one peer), states of 4 KiB, TTLs of 10 minutes;
 * beyond, entries are dropped and counted. Expired entries are swept on the
 * peer's tick. Relaying sends each entry's remaining time to live, so a
 * relay never extends one.
 *
 * Presence is advisory: a peer that passed the handshake may report any
 * agent (entries are not signed), except that this peer's own agents are
 * only ever set here.
 */
import { Emitter } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { canonicalJson, type Json } from '../crdt/types/json.ts'
import { PRESENCE_LIMITS, isValidName, type PresenceEntry, type SyncSession } from '../sync/index.ts'

/** Bounds of the table. */
export const PRESENCE_TABLE_LIMITS = {
  maxEntries: 1024,
  /** Agents reported by one peer. */
  maxPerPeer: 128,
  /** Removed agents whose clock is kept (a late, older entry cannot bring them back). */
  maxRemoved: 1024,
} as const

/** Delay that coalesces the entries sent to sessions, ms. */
const FAN_OUT_DELAY_MS = 20

/** One agent's presence as the table shows it. */
export interface PresenceInfo {
  readonly agent: string
  /** The peer that serves the agent (reported it). */
  readonly peer: string
  /** The name it works on, if any. */
  readonly name?: string
  /** What it says it does (JSON). */
  readonly status: Json
  /** When the entry expires, ms since the epoch (this peer's clock). */
  readonly expiresAt: number
  /** When this peer learned it, ms since the epoch. */
  readonly updatedAt: number
  /** True for an agent this peer serves (set here). */
  readonly local: boolean
}

/** What {@link Presence.set} takes. */
export interface PresenceUpdate {
  /** What the agent does (JSON, at most 4 KiB as canonical JSON). */
  readonly status: Json
  /** The name it works on (sent only to peers that may read it). */
  readonly name?: string
  /** How long the entry holds, ms (1..600 000). */
  readonly ttlMs: number
}

/** Counters of the table. */
export interface PresenceStats {
  entries: number
  /** Entries taken from sessions (newer than held), and ignored (not newer, or about this peer's own agents). */
  received: number
  stale: number
  /** Entries dropped: the table or a peer's share full, or a state that is not JSON. */
  dropped: number
  expired: number
}

interface Held {
  readonly entry: PresenceEntry
  readonly status: Json
  readonly expiresAt: number
  readonly updatedAt: number
  /** The session it came from (not sent back there); undefined for a local agent. */
  readonly source: SyncSession | undefined
}

/** See the module comment. */
export class Presence {
  /** `change`: the table changed (an entry set, received, removed or expired). */
  readonly events = new Emitter<{ change: { readonly agents: readonly string[] } }>()
  private readonly held = new Map<string, Held>()
  /** Clocks of removed agents, oldest first (bounded). */
  private readonly removed = new Map<string, number>()
  private readonly outgoing = new Map<string, Held>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private closed = false
  private readonly counts: Omit<PresenceStats, 'entries'> = { received: 0, stale: 0, dropped: 0, expired: 0 }

  constructor(
    private readonly options: {
      /** This peer's id: the `peer` of its own agents' entries. */
      readonly agentId: string
      readonly sessions: () => Iterable<SyncSession>
      readonly now?: () => number
    },
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** Counters (and the number of entries held). */
  get stats(): Readonly<PresenceStats> {
    return { entries: this.held.size, ...this.counts }
  }

  /**
   * Sets the presence of `agent`, an agent this peer serves (itself, or a
   * client of one of its doors), and sends it to every peer.
   * @throws ConcordError `CONCORD_INVALID_ARGUMENT` (bad agent, TTL, name or status), `CONCORD_LIMIT_EXCEEDED` (table full)
   */
  set(agent: string, update: PresenceUpdate): PresenceInfo {
    this.checkOpen()
    checkAgent(agent)
    const { ttlMs, name, status } = update
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > PRESENCE_LIMITS.maxTtlMs) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `presence: ttl must be 1..${PRESENCE_LIMITS.maxTtlMs} ms, got ${String(ttlMs)}`)
    }
    if (name !== undefined && !isValidName(name))
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'presence: a name must be a non-empty string of at most 1024 characters')
    const state = new TextEncoder().encode(canonicalJson(status))
    if (state.length > PRESENCE_LIMITS.maxStateBytes) {
      throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `presence: a status of ${state.length} bytes of JSON is over ${PRESENCE_LIMITS.maxStateBytes}`)
    }
    const previous = this.held.get(agent)
    if ((!previous || previous.entry.peer !== this.options.agentId) && !this.hasRoom(this.options.agentId, previous !== undefined)) {
      throw new ConcordError(
        ErrorCodes.LIMIT_EXCEEDED,
        `presence: the table is full (${PRESENCE_TABLE_LIMITS.maxEntries} agents, ${PRESENCE_TABLE_LIMITS.maxPerPeer} per peer)`,
      )
    }
    const now = this.now()
    const clock = this.nextClock(agent, now)
    const entry: PresenceEntry = { agent, peer: this.options.agentId, clock, ttlMs, name: name ?? '', state }
    const held: Held = { entry, status: JSON.parse(canonicalJson(status)) as Json, expiresAt: now + ttlMs, updatedAt: now, source: undefined }
    this.removed.delete(agent)
    this.held.set(agent, held)
    this.send(held)
    this.events.emit('change', { agents: [agent] })
    return this.info(held)
  }

  /** Removes the presence of `agent` (an agent this peer serves) everywhere; false if it had none here. */
  clear(agent: string): boolean {
    this.checkOpen()
    checkAgent(agent)
    const previous = this.held.get(agent)
    if (!previous || previous.entry.peer !== this.options.agentId) return false
    const now = this.now()
    const entry: PresenceEntry = {
      agent,
      peer: this.options.agentId,
      clock: this.nextClock(agent, now),
      ttlMs: 0,
      name: previous.entry.name,
      state: new Uint8Array(0),
    }
    this.forget(agent, entry.clock)
    this.send({ entry, status: null, expiresAt: now, updatedAt: now, source: undefined })
    this.events.emit('change', { agents: [agent] })
    return true
  }

  /** Every entry that has not expired, by agent; `visible` keeps those a reader may see (by their name). */
  list(visible: (name: string | undefined) => boolean = () => true): PresenceInfo[] {
    const now = this.now()
    const out: PresenceInfo[] = []
    for (const held of this.held.values()) {
      if (held.expiresAt <= now) continue
      const name = held.entry.name === '' ? undefined : held.entry.name
      if (visible(name)) out.push(this.info(held))
    }
    return out.sort((a, b) => (a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0))
  }

  /** Entries received from `session` (its `presence` event). */
  receive(session: SyncSession, entries: readonly PresenceEntry[]): void {
    if (this.closed) return
    const now = this.now()
    const changed: string[] = []
    for (const entry of entries) {
      // This peer's own agents are set here only; nobody reports for this peer.
      const held = this.held.get(entry.agent)
      if (entry.peer === this.options.agentId || held?.entry.peer === this.options.agentId) {
        this.counts.stale++
        continue
      }
      const known = held?.entry.clock ?? this.removed.get(entry.agent) ?? -1
      if (entry.clock <= known) {
        this.counts.stale++
        continue
      }
      if (entry.ttlMs === 0) {
        this.counts.received++
        const existed = this.held.has(entry.agent)
        this.forget(entry.agent, entry.clock)
        this.send({ entry, status: null, expiresAt: now, updatedAt: now, source: session })
        if (existed) changed.push(entry.agent)
        continue
      }
      let status: Json
      try {
        status = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(entry.state)) as Json
        canonicalJson(status)
      } catch {
        this.counts.dropped++
        continue
      }
      if (!held && !this.hasRoom(entry.peer)) {
        this.counts.dropped++
        continue
      }
      this.counts.received++
      const next: Held = { entry, status, expiresAt: now + entry.ttlMs, updatedAt: now, source: session }
      this.removed.delete(entry.agent)
      this.held.set(entry.agent, next)
      this.send(next)
      changed.push(entry.agent)
    }
    if (changed.length > 0) this.events.emit('change', { agents: changed })
  }

  /** A session opened: it gets every entry held (with its remaining time). */
  sessionOpened(session: SyncSession): void {
    if (this.closed) return
    const now = this.now()
    const entries: PresenceEntry[] = []
    for (const held of this.held.values()) if (held.expiresAt > now) entries.push(remaining(held, now))
    if (entries.length > 0) session.sendPresence(entries)
  }

  /** Drops expired entries (the peer's tick calls it). */
  sweep(): void {
    const now = this.now()
    const expired: string[] = []
    for (const [agent, held] of this.held) {
      if (held.expiresAt > now) continue
      this.forget(agent, held.entry.clock)
      expired.push(agent)
    }
    if (expired.length === 0) return
    this.counts.expired += expired.length
    this.events.emit('change', { agents: expired })
  }

  /** Stops sending; the table is dropped. */
  close(): void {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.outgoing.clear()
    this.held.clear()
  }

  private checkOpen(): void {
    if (this.closed) throw new ConcordError(ErrorCodes.CLOSED, 'presence: the peer is closed')
  }

  /** Whether one more agent of `peer` fits (`replacing`: it takes the place of an entry held). */
  private hasRoom(peer: string, replacing = false): boolean {
    if (this.held.size - (replacing ? 1 : 0) >= PRESENCE_TABLE_LIMITS.maxEntries) return false
    let ofPeer = 0
    for (const held of this.held.values()) if (held.entry.peer === peer) ofPeer++
    return ofPeer < PRESENCE_TABLE_LIMITS.maxPerPeer
  }

  /** The next clock of a local agent: above anything seen for it, and the wall clock. */
  private nextClock(agent: string, now: number): number {
    const seen = this.held.get(agent)?.entry.clock ?? this.removed.get(agent) ?? 0
    return Math.max(seen + 1, now)
  }

  private forget(agent: string, clock: number): void {
    this.held.delete(agent)
    this.removed.delete(agent)
    this.removed.set(agent, clock)
    while (this.removed.size > PRESENCE_TABLE_LIMITS.maxRemoved) this.removed.delete(this.removed.keys().next().value!)
  }

  /** Queues an entry for every session but its source; sent together a moment later. */
  private send(held: Held): void {
    this.outgoing.set(held.entry.agent, held)
    if (this.timer) return
    this.timer = setTimeout(() => this.fanOut(), FAN_OUT_DELAY_MS)
    this.timer.unref?.()
  }

  private fanOut(): void {
    this.timer = undefined
    if (this.closed) return
    const now = this.now()
    const queued = [...this.outgoing.values()]
    this.outgoing.clear()
    for (const session of this.options.sessions()) {
      const entries = queued.filter((held) => held.source !== session && (held.entry.ttlMs === 0 || held.expiresAt > now)).map((held) => remaining(held, now))
      if (entries.length > 0) session.sendPresence(entries)
    }
  }

  private info(held: Held): PresenceInfo {
    const { entry } = held
    return {
      agent: entry.agent,
      peer: entry.peer,
      ...(entry.name === '' ? {} : { name: entry.name }),
      status: held.status,
      expiresAt: held.expiresAt,
      updatedAt: held.updatedAt,
      local: entry.peer === this.options.agentId,
    }
  }
}

/** The entry as sent at `now`: its remaining time to live (a removal stays 0). */
function remaining(held: Held, now: number): PresenceEntry {
  if (held.entry.ttlMs === 0) return held.entry
  return { ...held.entry, ttlMs: Math.max(1, Math.min(PRESENCE_LIMITS.maxTtlMs, held.expiresAt - now)) }
}

function checkAgent(agent: unknown): void {
  if (typeof agent !== 'string' || agent.length === 0 || agent.length > PRESENCE_LIMITS.maxIdLength) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `presence: an agent id must be a non-empty string of at most ${PRESENCE_LIMITS.maxIdLength} characters`)
  }
}
