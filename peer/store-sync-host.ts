/**
 * The {@link SyncHost} of a peer: the sync protocol's view of the peer's
 * store. Remote commits are applied through the store (validated, logged
 * per the durability mode, all or none). Every unit the store commits is
 * announced to the sessions with the session it came from as origin, so it
 * is not echoed back: a remote commit as soon as it is applied and queued
 * (the store's `applied` event; its sender is acknowledged only once it is
 * durable), a local one once it is durable (`committed`).
 */
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { EncodedProvenance } from '../crdt/provenance.ts'
import type { HlcTimestamp } from '../crdt/hlc.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import { replicaDigest } from '../crdt/state-digest.ts'
import { sha256 } from '../persistence/format/digest.ts'
import type { Store } from '../persistence/store.ts'
import type { CommittedUnitRecord } from '../persistence/store-types.ts'
import { afterThisTurn } from '../persistence/turn.ts'
import {
  provesSecret,
  type Access,
  type GroupedCommit,
  type HostApplyResult,
  type LocalCommit,
  type HostedName,
  type HostRecordRun,
  type AgentId,
  type PresentedCredentials,
  type SyncHost,
  ItemIndex,
  type ItemSet,
} from '../sync/index.ts'
import type { DeltaEntry } from '../sync/messages.ts'
import { overlayHost } from './host-overlay.ts'
import { HeavyApplyGate } from './apply-gate.ts'
import { type OwnedEntry, provenanceRuns, RemoteApply } from './remote-apply.ts'
import type { AccessFunction, AuthOptions, CredentialCheck } from './options.ts'

/** Options of a {@link StoreSyncHost}. */
export interface StoreSyncHostOptions {
  readonly store: Store
  readonly auth?: AuthOptions
  readonly access?: AccessFunction
  /**
   * Called once per name that cannot be hydrated for sync (a corrupt
   * record: `CONCORD_CORRUPT_RECORD`); the name is left out of
   * anti-entropy and every other name still syncs.
   */
  readonly onUnreadable?: (name: string, error: ConcordError) => void
  /**
   * Gets a type ready before a remote commit carrying it is applied
   * (resolves undefined), or says why this peer cannot hold it: entries of
   * that type are then left out (reported once per name through
   * `onUnsupported`) and the rest of the commit is applied.
   */
  readonly prepareType?: (type: ReplicaType) => string | undefined | Promise<string | undefined>
  /** Called once per name left out of remote commits because its type cannot be held here. */
  readonly onUnsupported?: (name: string, error: ConcordError) => void
  /** Delta bytes from which a remote commit waits its turn (see apply-gate.ts; default 64 KiB, 0: off). */
  readonly heavyApplyBytes?: number | undefined
}

/**
 * Implements the sync protocol's local side over a {@link Store}. It keeps
 * no replicas of its own: names and types come from the store (`list()`
 * hydrates nothing), and what the protocol reads it holds for the slice it
 * reads (`hold`: the store hydrates the names and keeps them in memory until
 * released), so an anti-entropy round over 100,000 names keeps a slice of
 * them in memory besides the store's bounded cache. A name the store holds
 * hydrated (the application has it open) reads without a hold.
 */
export class StoreSyncHost implements SyncHost {
  private readonly commits = new Emitter<{ commit: LocalCommit }>()
  /** Replicas held for sessions that read them (`hold`), with how many holds each. */
  private readonly leased = new Map<string, { readonly replica: Replica; holds: number }>()
  private readonly emptyVersions = new Map<ReplicaType, Uint8Array>()
  private readonly offCommitted: Unsubscribe
  /** Names left out of sync because their data is corrupt (reported once each). */
  private readonly unreadable = new Set<string>()
  /** Heavy remote commits take turns, after a macrotask each, so that other sessions' small ones go first. */
  private readonly gate: HeavyApplyGate
  /** Remote commits applied through the store (peer/remote-apply.ts). */
  private readonly remote: RemoteApply
  /** The item set of every listed name for reconciliations, kept as names change (sync/item-index.ts). */
  readonly itemIndex: ItemIndex

  constructor(private readonly options: StoreSyncHostOptions) {
    this.gate = new HeavyApplyGate(options.heavyApplyBytes)
    this.remote = new RemoteApply({ options, unreadable: this.unreadable, hydrate: (name, type) => this.hydrate(name, type) })
    const announce = ({ records, origin }: { records: readonly CommittedUnitRecord[]; origin?: unknown }): void => {
      // No session to relay to (none connected): nothing to build (creating 100,000 names offline built an entry list per commit).
      if (this.commits.listenerCount('commit') === 0) return
      for (const run of provenanceRuns(records)) {
        const entries: DeltaEntry[] = run.map((record) =>
          record.signature === undefined
            ? { name: record.name, replicaType: record.type, delta: record.delta }
            : { name: record.name, replicaType: record.type, delta: record.delta, signature: record.signature },
        )
        // The commit's provenance: that of its changes (a `state` record a write logs first is this peer's).
        const change = run.find((record) => record.kind === 'delta') ?? run[0]
        const provenance = change && { agent: change.agent, message: change.message, metaJson: change.metaJson, authored: change.authored }
        if (entries.length > 0) this.commits.emit('commit', { entries, origin, provenance })
      }
    }
    // A remote commit is relayed once applied (its sender keeps it until acknowledged, which waits
    // for durability); this peer's own changes only once durable (a change lost here in a crash
    // must not live on elsewhere: its replacement would reuse its identity).
    const offApplied = options.store.events.on('applied', announce)
    const offCommitted = options.store.events.on('committed', (unit) => {
      if (!unit.announced) announce(unit)
    })
    const { store } = options
    this.itemIndex = new ItemIndex({
      list: () => this.list(),
      listedType: (name) => (this.unreadable.has(name) ? undefined : store.listedType(name)),
      volatile: () => store.hydratedNames(),
      digest: (name) => this.digest(name),
      knownDigest: (name) => (this.leased.has(name) ? undefined : store.knownDigestOf(name)),
      version: (name) => this.version(name),
      deltaSince: (name, version) => this.deltaSince(name, version),
      hold: (names) => this.hold(names),
      yieldTurn: () => this.yieldTurn(),
    })
    const touch = ({ name }: { name: string }): void => this.itemIndex.touch(name)
    const touchRecords = ({ records }: { records: readonly CommittedUnitRecord[] }): void => {
      for (const record of records) this.itemIndex.touch(record.name)
    }
    // Names leaving memory or storage, and every event that may change a name's state while it is not in memory.
    const offIndex = [
      store.watchNames((name) => this.itemIndex.touch(name)),
      store.events.on('applied', touchRecords),
      store.events.on('committed', touchRecords),
      ...(['truncated', 'repaired', 'rolledBack', 'lost', 'expired', 'archived', 'rehydrated', 'migrated'] as const).map((event) =>
        store.events.on(event, touch),
      ),
    ]
    this.offCommitted = () => {
      offApplied()
      offCommitted()
      for (const off of offIndex) off()
    }
  }

  /** The item set of every listed name now (sync/item-index.ts), for reconciliations. */
  items(): Promise<ItemSet> {
    return this.itemIndex.snapshot()
  }

  /** Takes a name back into sync after its data was repaired (`Store.repair`). */
  readable(name: string): void {
    this.unreadable.delete(name)
    this.itemIndex.touch(name)
  }

  /** Stops announcing commits. */
  stop(): void {
    this.offCommitted()
  }

  /** How many replicas this host holds in memory for the anti-entropy work under way. */
  get heldReplicas(): number {
    return this.leased.size
  }

  /** Every stored name but the damaged ones, from the store's index (nothing is hydrated). */
  async list(): Promise<Iterable<HostedName>> {
    const names = await this.options.store.listNames()
    return this.unreadable.size === 0 ? names : names.filter((info) => !this.unreadable.has(info.name))
  }

  /**
   * Keeps the replicas of `names` in memory, hydrated by the store, until
   * the returned function is called; a name whose data is corrupt is left
   * out and reported once, a name that is gone is left out.
   */
  async hold(names: readonly string[]): Promise<() => void> {
    const lease = await this.options.store.lease(names)
    for (const [name, error] of lease.failed) {
      if (isConcordError(error, ErrorCodes.CORRUPT_RECORD)) this.markUnreadable(name, error)
      else if (!isConcordError(error, ErrorCodes.NOT_FOUND)) {
        lease.release()
        throw error
      }
    }
    for (const [name, replica] of lease.replicas) {
      if (this.unreadable.delete(name)) this.itemIndex.touch(name)
      const held = this.leased.get(name)
      if (held) held.holds++
      else this.leased.set(name, { replica, holds: 1 })
    }
    let released = false
    return () => {
      if (released) return
      released = true
      for (const name of lease.replicas.keys()) {
        const held = this.leased.get(name)
        if (held && --held.holds === 0) this.leased.delete(name)
      }
      lease.release()
    }
  }

  private markUnreadable(name: string, error: ConcordError): void {
    if (this.unreadable.has(name)) return
    this.unreadable.add(name)
    this.itemIndex.touch(name)
    this.options.onUnreadable?.(name, error)
  }

  /** The store's replica of `name`, or undefined (reported once) when its data is corrupt. */
  private async hydrate(name: string, type: ReplicaType): Promise<Replica | undefined> {
    try {
      const replica = await this.options.store.open(name, type)
      if (this.unreadable.delete(name)) this.itemIndex.touch(name)
      return replica
    } catch (error) {
      if (!isConcordError(error, ErrorCodes.CORRUPT_RECORD)) throw error
      this.markUnreadable(name, error)
      return undefined
    }
  }

  /** A turn of the event loop (other sessions, I/O). */
  yieldTurn(): Promise<void> {
    return new Promise((resolve) => afterThisTurn(resolve))
  }

  /** The type the store knows for `name` without reading storage (the admission's quick check; the store has the last word). */
  typeOf(name: string): ReplicaType | undefined {
    return this.options.store.knownType(name)
  }

  version(name: string): Uint8Array {
    const held = this.leased.get(name)
    if (held) return held.replica.version()
    const version = this.options.store.versionOf(name)
    if (version === undefined) throw notHeld(name)
    return version
  }

  /** The state digest of `name`: a held name's from its replica, else the store's (hydrated, or kept in its metadata), else undefined. */
  digest(name: string): Uint8Array | undefined {
    const held = this.leased.get(name)
    if (held) return replicaDigest(name, held.replica, sha256)
    return this.options.store.digestOf(name)
  }

  deltaSince(name: string, version: Uint8Array | null): Uint8Array | null {
    const replica = this.replica(name)
    return replica.deltaSince(version ?? this.emptyVersion(replica))
  }

  /**
   * What replicas at the given versions lack of `wanted`, without
   * hydrating: a name held here from its replica, any other through
   * `Store.storedDeltas` (which reads a name in memory from its replica,
   * the others from storage); undefined for a name only its
   * hydration can answer (see persistence/names/stored-state.ts), or one
   * that is damaged here: the answer then holds it, as before.
   */
  async storedDeltas(
    wanted: ReadonlyArray<{ readonly name: string; readonly type: ReplicaType; readonly since: Uint8Array | null }>,
  ): Promise<Array<Uint8Array | null | undefined>> {
    const out: Array<Uint8Array | null | undefined> = new Array(wanted.length).fill(undefined)
    const stored: number[] = []
    for (const [at, item] of wanted.entries()) {
      if (this.unreadable.has(item.name)) continue
      const replica = this.leased.get(item.name)?.replica
      if (replica === undefined) {
        stored.push(at)
        continue
      }
      try {
        out[at] = replica.deltaSince(item.since ?? this.emptyVersion(replica))
      } catch {
        // The hold path answers it (and reports a malformed version).
      }
    }
    if (stored.length > 0) {
      const deltas = await this.options.store.storedDeltas(stored.map((at) => wanted[at])).catch(() => undefined)
      if (deltas) for (const [i, at] of stored.entries()) out[at] = deltas[i]
    }
    return out
  }

  /**
   * The logged changes of `name` a replica at `since` lacks, from the
   * store's log (`Store.recordsSince`), with their provenance; undefined
   * when the store cannot tell them (the answer sends `lack`).
   */
  async recordsSince(
    name: string,
    since: Uint8Array | null,
    lack: Uint8Array,
    limits: { readonly maxBytes: number; readonly maxRecords: number; readonly until?: HlcTimestamp | undefined },
  ): Promise<HostRecordRun | undefined> {
    const type = this.options.store.knownType(name)
    if (type === undefined || this.unreadable.has(name)) return undefined
    const run = await this.options.store.recordsSince(name, since ?? this.options.store.emptyVersion(type), lack, limits).catch(() => undefined)
    if (!run) return undefined
    return {
      records: run.records.map((record) => ({
        delta: record.delta,
        provenance: { agent: record.agent, message: record.message, metaJson: record.metaJson, authored: record.authored },
        signature: record.signature,
        logged: record.hlc,
      })),
      residual: run.residual,
    }
  }

  /** The store's clock now (every change applied before has an earlier record time). */
  logClock(): HlcTimestamp {
    return this.options.store.clockNow()
  }

  /**
   * Applies a remote commit through the store, all or none. The one
   * exception is a name whose local data is corrupt (it cannot take
   * anything, and `open` fails for it whatever arrives): it is left out and
   * reported, and the rest of the commit is applied, so that one damaged
   * name does not hold back every name that travels with it (an
   * anti-entropy answer bundles many). Likewise, entries of a type this peer
   * cannot hold (`prepareType`) are left out, as a names filter would.
   */
  applyRemote(
    entries: readonly DeltaEntry[],
    origin: unknown,
    applied?: () => void,
    provenance?: EncodedProvenance & { readonly signable?: boolean },
    options?: { readonly independent?: boolean | undefined },
  ): Promise<HostApplyResult> {
    const logged = this.remote.loggedProvenance(provenance, origin)
    return this.gate.run(entries, () => this.remote.applyNow(entries, origin, applied, logged, options?.independent === true))
  }

  /** See {@link SyncHost.applyRemoteGroup}: every commit's entries in one store commit, each delta under its commit's author. */
  applyRemoteGroup(commits: readonly GroupedCommit[], origin: unknown, applied?: () => void): Promise<HostApplyResult> {
    const entries: OwnedEntry[] = []
    for (const commit of commits) {
      const provenance = this.remote.loggedProvenance(commit.provenance, origin)
      for (const entry of commit.entries) entries.push({ ...entry, provenance })
    }
    // Commits of one name each (DELTAs) were units of their own there: grouping them marks no name joint.
    const independent = commits.every((commit) => commit.entries.length <= 1)
    return this.gate.run(entries, () => this.remote.applyNow(entries, origin, applied, this.remote.loggedProvenance(undefined, origin), independent))
  }

  /** Which names may share a unit with another (the store's joint names, persistence/names/joint-names.ts). */
  joints(): Promise<(name: string) => boolean> {
    return this.options.store.jointNames()
  }

  /** How many remote commits were heavy enough to wait their turn. */
  get heavyCommits(): number {
    return this.gate.heavy
  }

  subscribe(listener: (commit: LocalCommit) => void): Unsubscribe {
    return this.commits.on('commit', listener)
  }

  /** Checks the credentials of a peer that connected to this one (`auth.accept`, else the shared `auth.token`). */
  authenticate(peer: AgentId, presented: PresentedCredentials): Promise<boolean> {
    const auth = this.options.auth
    return checkCredentials(auth?.accept ?? auth?.token, peer, presented)
  }

  /**
   * This host as seen by sessions this peer dialed: the same in every way
   * but the credential check, which uses `auth.acceptDialed`.
   */
  forDialedSessions(): SyncHost {
    return overlayHost(this, { authenticate: (peer, presented) => checkCredentials(this.options.auth?.acceptDialed, peer, presented) })
  }

  access(peer: AgentId, name: string): Access {
    return this.options.access ? this.options.access(peer, name) : 'write'
  }

  private replica(name: string): Replica {
    const replica = this.leased.get(name)?.replica ?? this.options.store.hydratedReplica(name)
    if (!replica) throw notHeld(name)
    return replica
  }

  private emptyVersion(replica: Replica): Uint8Array {
    let version = this.emptyVersions.get(replica.type)
    if (!version) {
      version = this.options.store.emptyVersion(replica.type)
      this.emptyVersions.set(replica.type, version)
    }
    return version
  }
}

/** The error of reading a name that is neither held nor hydrated. */
function notHeld(name: string): ConcordError {
  return new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" is not held by this peer's sync host (hold it first)`)
}

/** Applies a {@link CredentialCheck}: what `peer` presented must prove the secret expected of it; no check accepts everyone. */
async function checkCredentials(check: CredentialCheck | undefined, peer: string, presented: PresentedCredentials): Promise<boolean> {
  if (check === undefined) return true
  const secret = typeof check === 'function' ? await check(peer) : typeof check === 'string' ? check : Object.hasOwn(check, peer) ? check[peer] : undefined
  return provesSecret(presented, typeof secret === 'string' ? secret : undefined)
}
