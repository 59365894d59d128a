/**
 * Live fan-out of committed units over gossipsub (libp2p), beside the
 * direct sync sessions.
 *
 * Publishing. Every unit committed locally (by this agent) is published once
 * on the group's topic; units committed within one turn of the event loop
 * go in one message (numbered `(run, seq)`), so gossipsub's per-message
 * cost (signature, id, IHAVE) is paid once for them. A unit with provenance
 * a gossip message cannot carry (made for another author, with a message or
 * meta, or signed) is not published: the sessions carry it with its
 * PROVENANCE, so a receiver logs it under its author (a gossip unit is
 * logged under its publisher). The sessions of libp2p peers
 * that gossipsub reaches directly (known subscribers of the topic) skip the
 * live commits gossip carries ({@link carriesTo}); every other session (a
 * WebSocket peer, a libp2p peer whose subscription is not known yet) sends
 * them as before. So a delta goes to a peer once, not twice. A unit larger
 * than the pub/sub limit, or one that a subscriber may not read (the
 * peer's admission decides: a subscriber no session identified may read
 * only on a peer without credentials or access rules), is not published:
 * sessions carry it, filtered per peer.
 *
 * Relaying. gossipsub forwards what a node receives to its own neighbours;
 * a received message is forwarded only if every subscriber this peer sees
 * (but the one it came from and its origin) may read every name in it,
 * otherwise it is kept here (and the sessions, filtered per peer, carry its
 * units onward).
 *
 * Receiving. A unit goes through the peer's admission like a session commit
 * (`admit`: access, type, limits, then store.commit, all or none, logged
 * with the sender as agent); names outside this peer's filter are left out.
 * The sender is the Concord agent id its libp2p PeerId
 * proved in a session handshake; a unit claiming another id is refused.
 * Without a session with the publisher (a relayed message in a partial
 * mesh), the claimed id is trusted only when this peer requires no
 * credentials (as a session's HELLO is); otherwise the unit is dropped and
 * anti-entropy fetches it. Everything dropped is counted, never thrown.
 *
 * Nothing missed. Gossipsub is best effort. A gap in a publisher's numbering
 * that does not fill within {@link GAP_GRACE_MS} triggers a pull (our
 * VERSIONS) on a session; the sessions' anti-entropy on every (re)connection
 * and their periodic anti-entropy cover the rest (a lost last message).
 */
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { Unsubscribe } from '../crdt/emitter.ts'
import type { Admission, DeltaEntry, LocalCommit, AgentId, SyncHost } from '../sync/index.ts'
import type { PubSubChannel } from '../transports/libp2p/pubsub.ts'
import { decodeGossipMessage, encodeGossipMessage, gossipHeaderBytes, gossipUnitBytes } from './gossip-codec.ts'

/** A gap in a publisher's numbering is pulled if it has not filled after this long (messages can overtake each other on two paths). */
export const GAP_GRACE_MS = 300
/** Units waiting to be applied before new ones are dropped (and pulled instead). */
const MAX_PENDING = 1024
/** Missing seqs remembered per publisher before the gap is pulled at once. */
const MAX_MISSING = 1024

/** The `origin` of commits applied from gossip (the store logs `remoteAgentId` as their agent). */
export class GossipOrigin {
  constructor(
    readonly remoteAgentId: string,
    readonly libp2pPeer: string,
    /** Whether this node forwarded the message to its neighbours (else sessions carry it on). */
    readonly relayed: boolean = true,
  ) {}
}

/** True when a commit was applied from gossip. */
export function isGossipOrigin(origin: unknown): origin is GossipOrigin {
  return origin instanceof GossipOrigin
}

/** Counters of the fan-out. */
export interface GossipStats {
  /** Units published, the messages that carried them, and their bytes. */
  published: number
  messagesOut: number
  bytesOut: number
  /** Local units not published (too large, or not readable by every subscriber): sessions carried them. */
  notPublished: number
  /** Local units left to the sessions because they carry provenance gossip cannot (another author, a message or meta, a signature). */
  withProvenance: number
  /** Messages received, and their bytes. */
  received: number
  bytesIn: number
  /** Units applied (changed state or not). */
  applied: number
  /** Messages dropped: undecodable. */
  malformed: number
  /** Units dropped: the sender may not write a name, a type mismatch, a claimed id that its PeerId did not prove, bad deltas. */
  refused: number
  /** Messages received and not forwarded: a subscriber here may not read a name in them. */
  kept: number
  /** Messages dropped: no session proved the publisher's id and this peer requires credentials (pulled instead). */
  unverified: number
  /** Dropped: too many units waiting to be applied (pulled instead). */
  overflow: number
  /** Gaps in a publisher's numbering that did not fill, and the pulls they caused. */
  gaps: number
  pulls: number
  /** Live commits the sessions skipped because gossip carried them. */
  skipped: number
}

/** Options of a {@link GossipFanout}. */
export interface GossipFanoutOptions {
  readonly channel: PubSubChannel
  readonly topic: string
  /** The peer's sync host (sessions use the same): its commits are published. */
  readonly host: Pick<SyncHost, 'subscribe'>
  /** The peer's admission: who may read what is published or relayed, and what a received unit may write. */
  readonly admission: Admission
  /** This peer's Concord id (the `agent` of its units). */
  readonly agent: string
  /** This peer requires credentials: trust only publisher ids proved by a session. */
  readonly requireVerifiedOrigin: boolean
  /** Largest message, bytes (the transport's pub/sub limit). */
  readonly maxMessageBytes: number
  /** Asks for anti-entropy (our VERSIONS) from the session with `libp2pPeer`, or from any session. */
  readonly pull: (libp2pPeer: string | undefined) => void
  /** A background failure (a unit that could not be stored). */
  readonly onError: (error: ConcordError) => void
}

interface Publisher {
  run: number
  last: number
  readonly missing: Set<number>
  timer: ReturnType<typeof setTimeout> | undefined
}

/** See the module comment. */
export class GossipFanout {
  readonly stats: GossipStats = {
    published: 0,
    messagesOut: 0,
    bytesOut: 0,
    notPublished: 0,
    withProvenance: 0,
    received: 0,
    bytesIn: 0,
    applied: 0,
    malformed: 0,
    refused: 0,
    kept: 0,
    unverified: 0,
    overflow: 0,
    gaps: 0,
    pulls: 0,
    skipped: 0,
  }

  private readonly options: GossipFanoutOptions
  /** Per commit: the subscribers it was published to (undefined: not published). */
  private readonly decided = new WeakMap<LocalCommit, ReadonlySet<string> | null>()
  /** libp2p PeerId -> Concord id proved by a session handshake. */
  private readonly identities = new Map<string, string>()
  private readonly publishers = new Map<string, Publisher>()
  private readonly run = 1 + Math.floor(Math.random() * 0x7fffffff)
  private seq = 0
  private pending = 0
  private applying: Promise<void> = Promise.resolve()
  private readonly offCommits: Unsubscribe
  private readonly offMessages: Unsubscribe
  private stopped = false
  private unverifiedPull: ReturnType<typeof setTimeout> | undefined
  /** Units waiting for the end of this turn to go out in one message. */
  private batch: Array<readonly DeltaEntry[]> = []
  private batchBytes = 0
  private batchTimer: ReturnType<typeof setTimeout> | undefined

  constructor(options: GossipFanoutOptions) {
    this.options = options
    // Subscribed before any session, so a commit is published before sessions decide whether to skip it.
    this.offCommits = options.host.subscribe((commit) => {
      this.decide(commit)
    })
    this.offMessages = options.channel.subscribe(options.topic, (data, from, relayed) => this.receive(data, from, relayed), {
      relay: (data, from, via) => this.mayRelay(data, from, via),
    })
  }

  /** Records the Concord id a session handshake proved for a libp2p PeerId. */
  identify(libp2pPeer: string, concordId: string): void {
    this.identities.set(libp2pPeer, concordId)
  }

  /**
   * Whether gossip carries `commit` to `libp2pPeer` (so its session skips
   * it): the commit came from gossip and this node relayed it, or it was
   * published, and the peer is a known subscriber.
   */
  carriesTo(commit: LocalCommit, libp2pPeer: string): boolean {
    if (this.stopped) return false
    const origin = commit.origin
    const reached = isGossipOrigin(origin) ? (origin.relayed ? this.subscriberSet() : null) : this.decide(commit)
    const carried = reached?.has(libp2pPeer) ?? false
    if (carried) this.stats.skipped++
    return carried
  }

  /** Resolves once the units received so far are applied (and durable). */
  idle(): Promise<void> {
    return this.applying
  }

  /** Stops publishing and receiving. */
  stop(): void {
    if (this.stopped) return
    this.stopped = true
    this.offCommits()
    this.offMessages()
    if (this.unverifiedPull) clearTimeout(this.unverifiedPull)
    if (this.batchTimer) clearTimeout(this.batchTimer)
    this.batch = []
    for (const publisher of this.publishers.values()) if (publisher.timer) clearTimeout(publisher.timer)
  }

  // ---- publishing ---------------------------------------------------------

  private subscriberSet(): Set<string> {
    return new Set(this.options.channel.subscribers(this.options.topic))
  }

  /** Publishes a local commit once; returns the subscribers it went to (null: not published). */
  private decide(commit: LocalCommit): ReadonlySet<string> | null {
    const known = this.decided.get(commit)
    if (known !== undefined) return known
    let result: ReadonlySet<string> | null = null
    if (!this.stopped && commit.origin === undefined) {
      // Gossip carries no provenance (a unit is logged under its publisher): a unit with any goes by the sessions, which carry it.
      if (this.plainOwn(commit)) result = this.publish(commit.entries)
      else this.stats.withProvenance++
    }
    this.decided.set(commit, result)
    return result
  }

  /** Whether a local commit is the publisher's own change with nothing gossip would lose: no other author, message, meta or signature. */
  private plainOwn(commit: LocalCommit): boolean {
    const provenance = commit.provenance
    if (commit.entries.some((entry) => entry.signature !== undefined)) return false
    return provenance === undefined || (provenance.agent === this.options.agent && provenance.message === undefined && provenance.metaJson === undefined)
  }

  private publish(entries: readonly DeltaEntry[]): ReadonlySet<string> | null {
    const subscribers = this.subscriberSet()
    if (!this.everyoneMayRead(subscribers, entries)) {
      this.stats.notPublished++
      return null
    }
    const header = gossipHeaderBytes(this.options.agent)
    const unitBytes = gossipUnitBytes(entries)
    if (header + unitBytes > this.options.maxMessageBytes) {
      this.stats.notPublished++
      return null
    }
    if (header + this.batchBytes + unitBytes > this.options.maxMessageBytes) this.flushBatch()
    this.batch.push(entries)
    this.batchBytes += unitBytes
    this.stats.published++
    if (!this.batchTimer) {
      this.batchTimer = setTimeout(() => this.flushBatch(), 0)
      this.batchTimer.unref?.()
    }
    return subscribers
  }

  /** Publishes the units batched so far as one message. */
  private flushBatch(): void {
    if (this.batchTimer) clearTimeout(this.batchTimer)
    this.batchTimer = undefined
    const units = this.batch
    this.batch = []
    this.batchBytes = 0
    if (units.length === 0 || this.stopped) return
    const { channel, topic } = this.options
    this.seq++
    const bytes = encodeGossipMessage({ run: this.run, seq: this.seq, agent: this.options.agent, units })
    this.stats.messagesOut++
    this.stats.bytesOut += bytes.byteLength
    channel.publish(topic, bytes).catch((error: unknown) => {
      // Best effort: the sessions' anti-entropy covers a message that did not go out.
      if (!this.stopped && !isConcordError(error, ErrorCodes.CLOSED)) {
        this.options.onError(new ConcordError(ErrorCodes.UNREACHABLE, `gossip publish failed: ${(error as Error)?.message ?? String(error)}`, { cause: error }))
      }
    })
  }

  /** Whether every one of `subscribers` may read every name of `entries` (the admission decides; an unidentified one is anonymous). */
  private everyoneMayRead(subscribers: Iterable<string>, entries: readonly DeltaEntry[]): boolean {
    const { admission } = this.options
    for (const peer of subscribers) {
      const id = this.identities.get(peer) as AgentId | undefined
      if (entries.some((entry) => !admission.mayRead(id, entry.name))) return false
    }
    return true
  }

  /** Whether this node may forward a received message to its neighbours (all but `via` and the origin `from`). */
  private mayRelay(data: Uint8Array, from: string, via: string): boolean {
    if (this.stopped) return false
    let units: ReadonlyArray<readonly DeltaEntry[]>
    try {
      units = decodeGossipMessage(data).units
    } catch {
      return false // garbage is not passed on (receive counts it)
    }
    const downstream = [...this.subscriberSet()].filter((peer) => peer !== via && peer !== from)
    const relay = units.every((unit) => this.everyoneMayRead(downstream, unit))
    if (!relay) this.stats.kept++
    return relay
  }

  // ---- receiving ----------------------------------------------------------

  private receive(data: Uint8Array, from: string, relayed = true): void {
    if (this.stopped) return
    this.stats.received++
    this.stats.bytesIn += data.byteLength
    let message
    try {
      message = decodeGossipMessage(data)
    } catch {
      this.stats.malformed++
      return
    }
    const proved = this.identities.get(from)
    if (proved !== undefined && proved !== message.agent) {
      this.stats.refused += message.units.length
      return
    }
    if (proved === undefined && this.options.requireVerifiedOrigin) {
      this.stats.unverified++
      this.pullSoon()
      return
    }
    this.track(from, message.run, message.seq)
    for (const unit of message.units) this.accept(unit, message.agent as AgentId, from, relayed)
  }

  /** Checks one unit through the admission (as a session commit) and queues it to be admitted. */
  private accept(unit: readonly DeltaEntry[], agent: AgentId, from: string, relayed: boolean): void {
    const { admission } = this.options
    const entries = unit.filter((entry) => admission.takes(entry.name))
    if (entries.length === 0) return
    if (admission.checkWrite(agent, entries)) {
      this.stats.refused++
      return
    }
    if (this.pending >= MAX_PENDING) {
      this.stats.overflow++
      this.pullSoon(from)
      return
    }
    this.pending++
    const origin = new GossipOrigin(agent, from, relayed)
    this.applying = this.applying.then(async () => {
      if (this.stopped) return
      try {
        const admitted = await admission.admit(agent, entries, origin)
        if ('refused' in admitted) this.stats.refused++
        else this.stats.applied++
      } catch (error) {
        if (this.stopped) return
        const code = isConcordError(error) ? error.code : undefined
        if (code !== ErrorCodes.CLOSED) {
          // Not stored: anti-entropy brings it again.
          this.options.onError(
            isConcordError(error)
              ? error
              : new ConcordError(ErrorCodes.STORAGE_ERROR, `could not apply a gossip unit: ${(error as Error)?.message ?? String(error)}`, { cause: error }),
          )
          this.pullSoon(from)
        }
      } finally {
        this.pending--
      }
    })
  }

  /** Follows a publisher's numbering; a gap that does not fill soon is pulled. */
  private track(from: string, run: number, seq: number): void {
    let publisher = this.publishers.get(from)
    if (!publisher || publisher.run !== run) {
      // A new publisher or a restart: what came before is the sessions' anti-entropy's.
      if (publisher?.timer) clearTimeout(publisher.timer)
      publisher = { run, last: seq, missing: new Set(), timer: undefined }
      this.publishers.set(from, publisher)
      return
    }
    publisher.missing.delete(seq)
    if (seq <= publisher.last) return
    for (let s = publisher.last + 1; s < seq && publisher.missing.size <= MAX_MISSING; s++) publisher.missing.add(s)
    publisher.last = seq
    if (publisher.missing.size > MAX_MISSING) {
      publisher.missing.clear()
      this.gap(from)
      return
    }
    if (publisher.missing.size > 0 && !publisher.timer) {
      const current = publisher
      current.timer = setTimeout(() => {
        current.timer = undefined
        if (this.stopped || current.missing.size === 0) return
        current.missing.clear()
        this.gap(from)
      }, GAP_GRACE_MS)
      current.timer.unref?.()
    }
  }

  private gap(from: string): void {
    this.stats.gaps++
    this.stats.pulls++
    this.options.pull(from)
  }

  /** One pull for a burst of dropped units. */
  private pullSoon(from?: string): void {
    if (this.unverifiedPull || this.stopped) return
    this.unverifiedPull = setTimeout(() => {
      this.unverifiedPull = undefined
      if (this.stopped) return
      this.stats.pulls++
      this.options.pull(from)
    }, GAP_GRACE_MS)
    this.unverifiedPull.unref?.()
  }
}
