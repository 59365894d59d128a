/**
 * The part of a peer every platform shares (Node's `Peer`, the browser's
 * `BrowserPeer`): one store, the typed replicas opened from it, the sync
 * host and the admission every door passes, the sessions over whatever
 * connections the platform brings (`attach`; kept by peer/peer-sessions.ts),
 * `transact`, `flush`, history, events and stats. It imports nothing that
 * needs Node: the platform's doors (listening, dialing, libp2p) are its
 * subclasses'.
 *
 * Flow of a local change: mutator -> replica emits `change` -> the store
 * logs it (per the durability mode) -> the store announces the durable unit
 * -> every open session ships it. A remote change: session -> host ->
 * store.commit (validate all, apply, log, all or none) -> acknowledged.
 */
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import { installOpeners, type TypedOpeners } from '../crdt/catalog.ts'
import type { HistoryEntry, NameInfo, Store } from '../persistence/store.ts'
import type { HistoryQuery } from '../persistence/history/queries.ts'
import type { RevertSelection } from '../persistence/history/selective-revert.ts'
import type { StoreOptions, NameOptions } from '../persistence/options.ts'
import { Admission, type SyncHost, type SyncSession } from '../sync/index.ts'
import type { Connection } from '../transports/transport.ts'
import type { ResolvedPeerSetup } from './options.ts'
import { checkIdentities, type IdentityProof } from './identity-check.ts'
import { StoreSyncHost } from './store-sync-host.ts'
import { flushWithAcks, type FlushOptions } from './flush.ts'
import { checkChangeOptions, type ChangeOptions } from './provenance.ts'
import { peerSignatureOptions } from './signing-options.ts'
import type { PeerEvents, PeerStats } from './peer-events.ts'
import { PeerSessions, type AttachOptions } from './peer-sessions.ts'
import { Presence } from './presence.ts'
import type { PeerStatus } from './status.ts'

export type { PeerEvents, PeerStats } from './peer-events.ts'

const TICK_MS = 500

/** The store options of a peer's options (its own store: `dir` or `storage`). */
export function peerStoreOptions(options: ResolvedPeerSetup): StoreOptions {
  return {
    dir: options.dir,
    storage: options.storage,
    createReplica: options.createReplica,
    agentId: options.agentId,
    durability: options.durability,
    mergeLocal: options.mergeLocal,
    checkpoint: options.checkpoint,
    retention: options.retention,
    cacheSize: options.cacheSize,
    ttlMs: options.ttlMs,
    archive: options.archiveAfterMs !== undefined ? { afterMs: options.archiveAfterMs } : undefined,
    schema: options.schema,
    documentLimits: options.documentLimits,
    waitingBudget: options.waitingBudget,
    now: options.now,
    signal: options.signal,
    signatures: peerSignatureOptions(options),
  }
}

/** The typed openers, one per type of the catalog (`peer.counter(name)`, `peer.set(name)`, ...; see crdt/catalog.ts). */
export interface PeerCore extends TypedOpeners<NameOptions> {}

/** What every peer does, whatever its platform. See the module comment; create peers with `createPeer`. */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: its typed openers (TypedOpeners) are installed by installOpeners below
export class PeerCore {
  /** The peer's agent id: stable, the store's owner, the author of its records, claimed in every handshake. */
  readonly agentId: string
  /** @deprecated Use {@link agentId} (the same id); kept for one release. */
  get id(): string {
    return this.agentId
  }
  readonly events = new Emitter<PeerEvents>()
  /** The peer's store (log, checkpoints, lifecycle). */
  readonly store: Store
  /**
   * Who works on what, across the peers (peer/presence.ts): `set(agent,
   * { status, name, ttlMs })`, `clear(agent)`, `list()`; never persisted.
   */
  readonly presence: Presence

  protected readonly host: StoreSyncHost
  /** What proves the ids remote peers claim (see peer/identity-check.ts). */
  protected readonly identityProof: IdentityProof
  /** The same host, checking the credentials of peers this one dialed. */
  protected readonly dialHost: SyncHost
  /**
   * The rules every door of this peer passes (sync/admission.ts): sessions,
   * gossip, y-websocket clients, and doors built above the peer (the MCP
   * server): credentials, access per name, type, limits, then validation,
   * apply and persist.
   */
  readonly admission: Admission
  /** The sessions not yet closed, in the order they were attached ({@link attached}'s). */
  protected readonly sessions: Set<SyncSession>
  /** Every door's sessions: attached, their events relayed, their times and counters kept (peer/peer-sessions.ts). */
  private readonly attached: PeerSessions
  private readonly ticker: ReturnType<typeof setInterval> | undefined
  private closing: Promise<void> | undefined

  constructor(
    protected readonly options: ResolvedPeerSetup,
    store: Store,
  ) {
    this.agentId = options.agentId
    this.store = store
    this.identityProof = checkIdentities(options)
    this.host = new StoreSyncHost({
      store,
      auth: options.auth,
      access: options.access,
      heavyApplyBytes: options.heavyApplyBytes,
      // A corrupt name is left out of sync (every other name still syncs) and reported once.
      onUnreadable: (name, error) => this.events.emit('error', { name, error }),
      prepareType: (type) => this.prepareType(type),
      onUnsupported: (name, error) => this.events.emit('error', { name, error }),
    })
    this.dialHost = this.host.forDialedSessions()
    this.presence = new Presence({ agentId: options.agentId, sessions: () => this.sessions, now: options.now })
    this.admission = new Admission(this.host, {
      filter: options.names,
      anonymousReads: !this.requiresCredentials() && options.access === undefined,
      storedType: (name) => store.typeOf(name),
    })
    const tickMs = options.tickMs ?? TICK_MS
    this.attached = new PeerSessions({
      agentId: options.agentId,
      options,
      events: this.events,
      presence: this.presence,
      admission: this.admission,
      // Timers of real time only when the peer runs on them (tickMs > 0), not a simulation's virtual time.
      realTimers: tickMs > 0,
    })
    this.sessions = this.attached.sessions
    store.events.on('error', (event) => this.events.emit('error', event))
    // A repaired name syncs again: anti-entropy both ways now, so peers refill what the damage lost.
    store.events.on('repaired', ({ name }) => {
      this.host.readable(name)
      for (const session of this.sessions) {
        session.pull()
        session.push()
      }
    })
    if (tickMs > 0) {
      this.ticker = setInterval(() => this.tick(), tickMs)
      // Node keeps no process alive for it; a browser's timer handle is a number.
      ;(this.ticker as { unref?: () => void }).unref?.()
    }
  }

  /** Adds a listener of a peer event (README, "Events"); returns a function that removes it. Same as `peer.events.on`. */
  on<K extends keyof PeerEvents>(event: K, listener: (payload: PeerEvents[K]) => void): Unsubscribe {
    return this.events.on(event, listener)
  }

  /** Adds a listener that runs once; returns a function that removes it. */
  once<K extends keyof PeerEvents>(event: K, listener: (payload: PeerEvents[K]) => void): Unsubscribe {
    return this.events.once(event, listener)
  }

  /** Removes a listener added with {@link on}. */
  off<K extends keyof PeerEvents>(event: K, listener: (payload: PeerEvents[K]) => void): void {
    this.events.off(event, listener)
  }

  /**
   * Drives the time-based parts of every session (handshake timeout, resync
   * retries, periodic anti-entropy). A timer calls it every `tickMs`; with
   * `tickMs: 0` the caller does (a simulation, in virtual time).
   */
  tick(now?: number): void {
    for (const session of this.sessions) session.tick(now)
    this.presence.sweep()
  }

  // ------------------------------------------------------------ replicas

  // The typed openers (counter, set, register, map, yjs, ...) are the
  // catalog's (crdt/catalog.ts): installed below, one per type.

  /**
   * Opens `name` as `type` (creating it if new). Opening a name as another
   * type than it was created with throws `CONCORD_TYPE_MISMATCH`.
   */
  async open(name: string, type: ReplicaType, options?: NameOptions): Promise<Replica> {
    this.checkOpen()
    const unsupported = await this.prepareType(type)
    if (unsupported !== undefined) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, unsupported)
    return this.store.open(name, type, options)
  }

  /**
   * Opens many names at once (creating the new ones), each as `type`: as
   * {@link open} for each, but the new names are stored together in one
   * batch (`Store.openMany`), which is how to create thousands of names
   * quickly. Resolves with the replicas in the order asked.
   */
  async openMany(names: ReadonlyArray<{ readonly name: string; readonly type: ReplicaType }>, options?: NameOptions): Promise<Replica[]> {
    this.checkOpen()
    for (const type of new Set(names.map((info) => info.type))) {
      const unsupported = await this.prepareType(type)
      if (unsupported !== undefined) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, unsupported)
    }
    return this.store.openMany(names, options)
  }

  /**
   * Runs `fn`, whose changes to several names are committed locally as one
   * atomic unit and shipped as one unit: a receiving peer persists and
   * applies all of them or none. Resolves once durable here, with the
   * records written (`{ name, seq }`; none if nothing changed). `agent`: who
   * made the change when this peer acts for someone else (a door serving
   * its clients; default this peer's id), logged in its records;
   * `message` (why) and `meta` are checked and kept with the change once
   * records carry provenance (see `ChangeProvenance`).
   */
  async transact(fn: () => void, options: ChangeOptions = {}): Promise<ReadonlyArray<{ readonly name: string; readonly seq: number }>> {
    this.checkOpen()
    checkChangeOptions(options)
    return this.store.atomic(fn, options)
  }

  /**
   * Resolves when everything written before the call is durable here and,
   * with `acks: n`, persisted by at least `n` distinct peers (peers that
   * connect meanwhile count). Waits at most `timeoutMs` (default 30 s, also
   * when no peer is connected), then rejects with a `FlushTimeoutError`
   * (`CONCORD_TIMEOUT`) listing who acknowledged; `onProgress` reports each
   * acknowledgement as it comes.
   */
  async flush(options: FlushOptions = {}): Promise<void> {
    this.checkOpen()
    return flushWithAcks(
      {
        store: this.store,
        sessions: this.sessions,
        onPeerConnected: (listener) => this.events.on('peer-connected', listener),
        needsPush: (session) => this.needsPush(session),
      },
      options,
    )
  }

  /**
   * The log records of `name`, oldest first: `{ seq, hlc, agent, message,
   * meta, delta, hash }`; filtered by author (`agent`) and time (`since`,
   * `until`, ms), paged with `from`/`limit`/`reverse` (see Store.historyPage
   * for a cursor).
   */
  history(name: string, options?: HistoryQuery): Promise<HistoryEntry[]> {
    this.checkOpen()
    return this.store.history(name, options)
  }

  /** The value of `name` as it was right after record `seq`. */
  async at(name: string, seq: number, options?: { signal?: AbortSignal }): Promise<unknown> {
    this.checkOpen()
    return (await this.store.at(name, seq, options)).value()
  }

  /**
   * A new, replicated change that brings `name` back to its value at `seq`,
   * or (`{ agent, since }`) that undoes one agent's changes since a time
   * where the type allows it (see Store.revert). Resolves with the seq of
   * that change (null if there was nothing to change). `agent`, `message`,
   * `meta` (of the revert itself) as for {@link transact}.
   */
  async revert(name: string, target: number | RevertSelection, options: ChangeOptions = {}): Promise<number | null> {
    this.checkOpen()
    checkChangeOptions(options)
    return this.store.revert(name, target, options)
  }

  /** Every name this peer holds, with type, record count, size and last change. */
  names(options?: { signal?: AbortSignal }): Promise<NameInfo[]> {
    this.checkOpen()
    return this.store.names(options)
  }

  // ------------------------------------------------------------ sessions

  /**
   * Runs the Concord protocol over any transport connection (the simulated
   * network, libp2p, a custom one). Returns the session.
   */
  attach(connection: Connection, options: { token?: string } = {}): SyncSession {
    this.checkOpen()
    if (connection.direction !== 'outbound') this.checkUnboundDoor('attach')
    const host = connection.direction === 'outbound' ? this.dialHost : this.host
    return this.attachWith(connection, { token: options.token, host })
  }

  /** Attaches with a given host and session tuning (the libp2p link's sessions). */
  protected attachWith(connection: Connection, options: AttachOptions): SyncSession {
    return this.attached.attach(connection, options)
  }

  /** Agent ids of the sessions that completed their handshake. */
  get connectedPeers(): string[] {
    return this.attached.connectedPeers()
  }

  /** Counters: bytes and frames exchanged, malformed input dropped, and more. */
  stats(): PeerStats {
    const totals = this.attached.totals()
    const waiting = this.store.waitingStats()
    return { sessions: this.sessions.size, totals, admission: { ...this.admission.stats }, waiting, presence: this.presence.stats }
  }

  /**
   * What the inspector shows (peer/status.ts): the durability mode and the
   * last fsync, and each session's sync state (lag in commits and bytes,
   * last acknowledgement, refused writes, malformed input). Read-only.
   */
  status(): PeerStatus {
    const now = this.attached.wallClock()
    return {
      agentId: this.agentId,
      now,
      durability: this.store.durability(),
      sessions: this.attached.statuses(now),
    }
  }

  /** Stops syncing, closes every connection and the store (flushing it). Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  /** True once {@link close} was called. */
  protected get isClosing(): boolean {
    return this.closing !== undefined
  }

  private async shutdown(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker)
    this.presence.close()
    await this.stopDialing()
    for (const session of this.sessions) session.close('peer closing')
    await this.stopTransports()
    this.host.stop()
    await this.store.close()
    await this.afterStoreClosed()
  }

  /** The platform's first step of closing: stop dialing and anything that would reopen connections (sessions close next). */
  protected async stopDialing(): Promise<void> {}

  /** The platform's step after the sessions closed: stop its transports. */
  protected async stopTransports(): Promise<void> {}

  /** The platform's last step of closing, once the store is closed (close a storage the peer opened itself). */
  protected async afterStoreClosed(): Promise<void> {}

  /**
   * Gets a replica type ready before a replica of it is opened or a remote
   * commit carrying it is applied (the browser peer loads Automerge's wasm on
   * first need). Resolves undefined when ready, or why this peer cannot hold
   * the type: opening it is then refused, and remote entries of it are left
   * out of the commits they come in (the rest is applied).
   */
  protected prepareType(_type: ReplicaType): string | undefined | Promise<string | undefined> {
    return undefined
  }

  /** Whether a session needs a fresh anti-entropy round before its ack covers everything (libp2p: live commits went by gossip). */
  protected needsPush(_session: SyncSession): boolean {
    return false
  }

  /** True when peers that connect must present credentials (`auth.accept`, or `auth.token` as a shared secret). */
  protected requiresCredentials(): boolean {
    return this.options.auth?.accept !== undefined || this.options.auth?.token !== undefined
  }

  /** Refuses a door other than libp2p when only `libp2p.identities` proves the ids `access` relies on. */
  protected checkUnboundDoor(what: string): void {
    if (this.identityProof !== 'libp2p') return
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `${what}: access grants rights by agent id and only libp2p.identities proves ids here; ` +
        'a peer that connects this way carries no PeerId and could claim any id. Give each peer its own secret (auth.accept) to serve it too.',
    )
  }

  protected checkOpen(): void {
    if (this.closing) throw new ConcordError(ErrorCodes.CLOSED, `peer "${this.agentId}" is closed`)
  }
}

installOpeners(PeerCore.prototype)
