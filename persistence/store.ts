/**
 * The store: named replicas persisted as an update log plus checkpoints.
 * This file is its facade: `openStore` composes the modules once, and every
 * method of {@link Store} checks its arguments and hands the call to the
 * one module that does the work (docs/design.md, "The store, module by
 * module"):
 *
 * - names/ (the owner of every name's state: hydrated entries, metadata,
 *   the index of names): `open`, `typeOf`, the readers' `lease`;
 * - writes/ (the write path: remote commits, local changes, `atomic`
 *   blocks, migrations, checkpoints, rollback): `commit`, `atomic`,
 *   `checkpoint`;
 * - history/ (`history`, `at`, `revert`, `changes`, `verify`, `repair`,
 *   `recordsSince`);
 * - lifecycle/ (`names`, `delete`, TTL, `gc`, the sweep, archival, the seal,
 *   the writes of a clean close);
 * - pipeline/ (the commit queue under all of them): `flush`, durability.
 *
 * The methods of history/ and of the names' lifecycle are those of the base
 * class {@link StoreHistory} (store-history.ts).
 *
 * See FORMAT.md for the key layout and value formats.
 */
import type { WaitingStats } from '../crdt/documents/waiting-room.ts'
import type { Emitter, Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { encodeProvenance } from '../crdt/provenance.ts'
import type { HlcTimestamp, HybridClock } from '../crdt/hlc.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import { agentId as brandAgentId, type AgentId } from '../crdt/agent-id.ts'
import { installAutomergeReloader } from './automerge-reload.ts'
import { StoreContext } from './context.ts'
import { JOINT_MARKER, JOINT_TRACKED_KEY, STORE_INFO_KEY } from './format/keys.ts'
import { decodeStoreInfo, encodeStoreInfo, UNCLAIMED } from './format/store-info.ts'
import { Archival } from './lifecycle/archival.ts'
import { LevelStorage } from './storage/level/level-storage.ts'
import { readLosses, type Loss } from './lifecycle/seal.ts'
import { writeOnClose } from './lifecycle/close-writes.ts'
import { StoreSeal } from './lifecycle/store-seal.ts'
import { checkName } from './names/check-name.ts'
import { Names, type NameLease } from './names/owner.ts'
import { storedDeltas, type StoredWanted } from './names/stored-state.ts'
import { checkRetention, type NameOptions, type ReplicaCreator, type StoreOptions } from './options.ts'
import { openLevelStorage } from './storage/level/open-level-storage.ts'
import { MemoryStorage } from './storage/memory-storage.ts'
import { throwIfAborted, type SignalOptions, type Storage } from './storage/storage.ts'
import { StoreHistory } from './store-history.ts'
import type { ApplyResult, ChangeProvenance, DurabilityStatus, StoreEvents } from './store-types.ts'
import { checkpointUnit } from './writes/checkpoints.ts'
import { RemoteCommits, type RemoteCommitOptions, type RemoteDelta } from './writes/remote-commit.ts'
import { Writes } from './writes/writes.ts'

export type { Loss } from './lifecycle/seal.ts'
export type { NameLease } from './names/owner.ts'
export type * from './store-types.ts'
export { RECORDS_WRITE_WAIT_MS } from './store-history.ts'

/** Opens a store (see {@link StoreOptions}). */
export async function openStore(options: StoreOptions): Promise<Store> {
  throwIfAborted(options.signal)
  checkRetention(options.retention)
  if (options.mergeLocal !== undefined && options.mergeLocal !== 'async' && options.mergeLocal !== 'all') {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, "openStore: mergeLocal must be 'async' or 'all'")
  }
  // A wasm trap in Automerge reloads its module instead of leaving every document dead.
  installAutomergeReloader()
  const ownsStorage = options.storage === undefined
  // Without a folder: the lean in-memory storage (memory-storage.ts), not memory-level.
  const storage = options.storage ?? (options.dir === undefined ? new MemoryStorage() : await openLevelStorage({ dir: options.dir, signal: options.signal }))
  try {
    const id = brandAgentId(String(options.agentId))
    const now = options.now ?? Date.now
    const claim = options.claim ?? true
    const infoBytes = await storage.get(STORE_INFO_KEY)
    const info = infoBytes ? decodeStoreInfo(infoBytes) : undefined
    if (info !== undefined && info.agentId !== UNCLAIMED && info.agentId !== id) throw ownerMismatch(info.agentId, id)
    // A new store, or one a maintenance tool created unclaimed: the first claiming opener owns it.
    if (info === undefined || (claim && info.agentId === UNCLAIMED)) {
      const agentId = claim ? id : UNCLAIMED
      const put = { type: 'put' as const, key: STORE_INFO_KEY, value: encodeStoreInfo({ agentId, created: info?.created ?? now() }) }
      // A new folder marks its joint names from the start (names/joint-names.ts); an existing one cannot know its old ones.
      const tracks = info === undefined ? [{ type: 'put' as const, key: JOINT_TRACKED_KEY, value: JOINT_MARKER }] : []
      await storage.batch([...tracks, put], { sync: true })
    }
    const defaults = options.createReplica === undefined || options.deltaMerger === undefined ? await import('./default-replicas.ts') : undefined
    const createReplica = options.createReplica ?? defaults!.defaultCreateReplica
    const deltaMerger = options.deltaMerger ?? defaults!.defaultDeltaMerger
    const store = new Store(storage, ownsStorage, id, createReplica, { ...options, deltaMerger })
    try {
      // Before the seal check: the losses it finds are reported right after this resolves.
      await store.primeIndex()
      await store.checkSeal()
    } catch (error) {
      await store.close().catch(() => undefined)
      throw error
    }
    return store
  } catch (error) {
    if (ownsStorage) await storage.close().catch(() => undefined)
    throw error
  }
}

/**
 * A clean close compacts a LevelDB folder of at most `maxBytes` whose logs
 * hold at least `minLogBytes` and an eighth of it (LevelStorage.compactIfSmall):
 * tens of ms for a few MB; larger folders, and a session that wrote little,
 * are left to LevelDB's own compactions.
 */
const COMPACT_ON_CLOSE = { maxBytes: 16 * 1024 * 1024, minLogBytes: 16 * 1024, minLogShare: 1 / 8 } as const

/** The error of opening a store that belongs to another agent, saying how to proceed. */
function ownerMismatch(owner: string, id: string): ConcordError {
  return new ConcordError(
    ErrorCodes.INVALID_ARGUMENT,
    `this store belongs to agent "${owner}", not "${id}": a folder holds the data of one agent. ` +
      `Open it with agentId "${owner}", or give "${id}" a folder of its own (to start it with this data: ` +
      `concord export --dir THIS | concord import --dir NEW; the first peer that opens NEW owns it)`,
  )
}

/** A store of named, persisted replicas. Create it with {@link openStore}. */
export class Store extends StoreHistory {
  /** Store events (commit, committed, durable, truncated, checkpoint, expired, archived, ...). */
  readonly events: Emitter<StoreEvents>
  /** The agent's clock (shared with the replicas it creates). */
  readonly clock: HybridClock
  /** Reports of damaged tails dropped since the store opened. */
  readonly truncations: Array<{ name: string; fromSeq: number; toSeq: number; reason: string }>
  /**
   * Records acknowledged before the last clean close that LevelDB no longer
   * held when this store opened (its newest log was truncated or damaged;
   * persistence/lifecycle/seal.ts). Each is also reported by a `lost` event
   * right after the store opens, fails `verify`, and stays recorded until
   * `repair(name)` accepts it ({@link recordedLosses}).
   */
  readonly losses: Loss[] = []
  private readonly remoteCommits: RemoteCommits
  private closing: Promise<void> | undefined
  private readonly seal: StoreSeal

  /** @internal use {@link openStore}. */
  constructor(
    /** The storage engine (bytes). */
    readonly storage: Storage,
    private readonly ownsStorage: boolean,
    /** The agent id. */
    readonly agentId: AgentId,
    createReplica: ReplicaCreator,
    options: StoreOptions,
  ) {
    // The modules, each given what it uses (the closures call modules made just below).
    const context = new StoreContext(storage, agentId, createReplica, options, (error, states) => writes.rollBack(error, states))
    const owner = new Names(context, {
      attach: (entry) => writes.attach(entry),
      migrate: (entry, schema) => writes.migrate(entry, schema),
      rehydrate: (name, signal) => archival.rehydrate(name, signal),
    })
    const writes = new Writes(context, owner)
    const archival = new Archival(context, owner)
    // The history and maintenance modules (time travel, queries, lifecycle) are made by the base class.
    super(context, owner, writes, archival)
    this.remoteCommits = new RemoteCommits(context, owner, writes)
    // The folder of a store on disk that opened its own storage: where its seal lives.
    this.seal = new StoreSeal(context, owner, ownsStorage ? options.dir : undefined)
    this.events = context.events
    this.clock = context.clock
    this.truncations = context.truncations
    const sweepMs = options.sweepMs ?? 10_000
    if (sweepMs > 0) this.lifecycle.start(sweepMs)
  }

  // ---------------------------------------------------------------- opening

  /** @internal on open: compares the seal with what LevelDB holds (persistence/lifecycle/seal.ts). */
  async checkSeal(): Promise<void> {
    this.losses.push(...(await this.seal.check()))
  }

  /** @internal on open: an empty store knows at once that every name is new (persistence/names/owner.ts). */
  async primeIndex(): Promise<void> {
    await this.owner.primeIfEmpty()
  }

  /** Every loss found on an open ({@link losses}) and not yet accepted by `repair`. */
  async recordedLosses(options: SignalOptions = {}): Promise<Loss[]> {
    this.context.checkOpen()
    throwIfAborted(options.signal)
    return readLosses(this.storage)
  }

  /**
   * Opens (creating it if needed) the replica `name` of `type`. Throws
   * `TypeMismatchError` when the name exists with another type,
   * `CONCORD_CORRUPT_RECORD` when its log is damaged in the middle,
   * `CONCORD_SCHEMA_TOO_NEW` / `CONCORD_MIGRATION_FAILED` for schema problems.
   */
  async open(name: string, type: ReplicaType, options: NameOptions = {}): Promise<Replica> {
    this.context.checkOpen()
    throwIfAborted(options.signal)
    checkName(name)
    const entry = await this.owner.entry(name, type, options)
    await this.owner.store(entry)
    return entry.replica
  }

  /**
   * Opens (creating those that are new) many names at once: as
   * {@link open} for each, but the new ones are stored together, in one
   * batch, rather than one batch and one wait each (issue 15: creating
   * 100,000 names). Resolves with the replicas in the order asked, once the
   * new names are stored per the durability mode; rejects as {@link open}
   * would for the first name that fails (the others stay open, the new ones
   * unstored until they change). A name may appear once.
   */
  async openMany(names: ReadonlyArray<{ readonly name: string; readonly type: ReplicaType }>, options: NameOptions = {}): Promise<Replica[]> {
    this.context.checkOpen()
    throwIfAborted(options.signal)
    const seen = new Set<string>()
    for (const { name } of names) {
      checkName(name)
      if (seen.has(name)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `openMany: "${name}" is asked for twice`)
      seen.add(name)
    }
    const entries = await this.owner.entries(names, options)
    await this.owner.storeMany(entries)
    return entries.map((entry) => entry.replica)
  }

  /** The type of a stored name, or undefined if it does not exist (archived names included). */
  async typeOf(name: string, options?: SignalOptions): Promise<ReplicaType | undefined> {
    this.context.checkOpen()
    return this.owner.typeOf(name, options)
  }

  /** The version of an empty replica of `type` (what `deltaSince` takes to mean "everything"). */
  emptyVersion(type: ReplicaType): Uint8Array {
    return this.context.emptyVersion(type)
  }

  // ---------------------------------------------------------------- reading many names (sync)

  /** Every stored name that is not archived, with its type; hydrates nothing. */
  async listNames(options: SignalOptions = {}): Promise<Array<{ readonly name: string; readonly type: ReplicaType }>> {
    this.context.checkOpen()
    return this.owner.list(options)
  }

  /**
   * Starts loading the index of names ({@link listNames}) in the background
   * if it is not loaded: a peer calls it when it listens or connects, so
   * that its first sync does not wait for it. Never throws.
   */
  preloadNames(): void {
    if (!this.context.closed) this.owner.preload()
  }

  /** The type of `name` if {@link listNames} lists it now, known without reading storage once it listed the names; else undefined. */
  listedType(name: string): ReplicaType | undefined {
    return this.owner.listedType(name)
  }

  /** The names held in memory now (the cache), whose digest may change with the next change. */
  hydratedNames(): string[] {
    return Array.from(this.owner.held(), (entry) => entry.name)
  }

  /**
   * Calls `listener` with a name when it leaves memory or stops being
   * stored (deleted, expired, archived): with {@link hydratedNames}, what a
   * reader needs to keep an index of names and digests up to date
   * (sync/item-index.ts) without listing every name again.
   */
  watchNames(listener: (name: string) => void): Unsubscribe {
    return this.owner.watch(listener)
  }

  /** The type of `name` as far as the store knows without reading storage (hydrated, or listed since it opened). */
  knownType(name: string): ReplicaType | undefined {
    return this.owner.knownType(name)
  }

  /** The version of `name` where the store has it without hydrating it (today: a hydrated name), else undefined. */
  versionOf(name: string): Uint8Array | undefined {
    return this.owner.versionOf(name)
  }

  /**
   * The state digest of `name` (crdt/state-digest.ts) without hydrating it,
   * once {@link listNames} loaded the index; undefined when unknown (hydrate
   * the name to know).
   */
  digestOf(name: string): Uint8Array | undefined {
    return this.owner.digestOf(name)
  }

  /** {@link digestOf} where it is known without computing a digest, else undefined. */
  knownDigestOf(name: string): Uint8Array | undefined {
    return this.owner.knownDigestOf(name)
  }

  /** The replica of `name` if it is hydrated (no storage read), else undefined. */
  hydratedReplica(name: string): Replica | undefined {
    return this.owner.live(name)?.replica
  }

  /**
   * What replicas at the given versions lack of stored names, read from
   * storage without hydrating them (a first sync's answer): for each, the
   * delta (null: nothing), or undefined where only the hydrated name can
   * tell (in memory, damaged, another schema...: persistence/names/stored-state.ts).
   */
  storedDeltas(wanted: readonly StoredWanted[], options: SignalOptions = {}): Promise<Array<Uint8Array | null | undefined>> {
    this.context.checkOpen()
    return storedDeltas(this.context, this.owner, wanted, options)
  }

  /**
   * Hydrates the names that exist among `names` and keeps them in memory
   * until the lease is released, whatever the cache size (a sync answer
   * reads them at one instant); names that cannot be read are in `failed`.
   */
  async lease(names: readonly string[], options: SignalOptions = {}): Promise<NameLease> {
    this.context.checkOpen()
    return this.owner.lease(names, options)
  }

  // ---------------------------------------------------------------- writing

  /**
   * Applies a remote delta to `name` and logs it; resolves once durable per
   * the name's mode. A delta that adds nothing is not logged (`changed:
   * false`). `type` is needed only when the name does not exist yet.
   */
  async applyRemote(
    name: string,
    delta: Uint8Array,
    options: { type?: ReplicaType; origin?: unknown; applied?: () => void } & ChangeProvenance & SignalOptions = {},
  ): Promise<ApplyResult> {
    const [result] = await this.commit([{ name, delta, type: options.type }], options)
    return result
  }

  /**
   * Applies deltas to several names and logs them as one atomic unit: after
   * a crash, either every record is there or none. Every delta is checked
   * (against the document limits, `CONCORD_LIMIT_EXCEEDED`, and decoded,
   * `CONCORD_DECODE_ERROR`) before any is applied, and a refused commit
   * leaves no name it would have created.
   *
   * `applied` is called once every delta is applied and the unit queued for
   * writing (its place in the log fixed, before it is durable; not called
   * when the commit is refused): a caller that applies remote commits in
   * order may take the next one from there, and still acknowledge each only
   * once its promise resolves. `independent`: the names never shared a
   * unit where the deltas come from (an anti-entropy bundle of unrelated
   * names), so they are not marked as joint (names/joint-names.ts).
   */
  async commit(deltas: readonly RemoteDelta[], options: RemoteCommitOptions = {}): Promise<ApplyResult[]> {
    this.context.checkOpen()
    return this.remoteCommits.commit(deltas, options)
  }

  /**
   * The public key bound to an author id (this store's own key, the
   * `signatures.authorKey` given, or the key an Ed25519 PeerId id names),
   * or undefined when none is known (persistence/signing.ts).
   */
  authorKeyOf(agent: string): Uint8Array | undefined {
    return this.context.signatures.boundKey(agent)
  }

  /**
   * Runs `fn` (synchronous local mutations of opened replicas) and logs all
   * the changes it made as one atomic unit; resolves once durable. The
   * records name `agent` as their author (default: this replica), see
   * {@link ChangeProvenance}.
   */
  async atomic(fn: () => void, options: SignalOptions & ChangeProvenance = {}): Promise<ReadonlyArray<{ name: string; seq: number }>> {
    this.context.checkOpen()
    throwIfAborted(options.signal)
    return this.writes.atomic(fn, encodeProvenance(options))
  }

  /** Resolves once every change so far is written and fsynced (whatever the mode). */
  async flush(options: SignalOptions = {}): Promise<void> {
    this.context.checkOpen()
    throwIfAborted(options.signal)
    await this.context.committer.flush()
  }

  /** Highest seq of `name` on stable storage (0 if none or not hydrated). */
  persistedSeq(name: string): number {
    return this.owner.live(name)?.state.durableSeq ?? 0
  }

  /**
   * The seq the live replica of `name` is exactly at: its newest logged
   * record, when no change of it waits to be logged. Undefined while one
   * waits, or when the name is not hydrated. `at(name, settledSeq)` is then
   * the replica's current state.
   */
  settledSeq(name: string): number | undefined {
    const live = this.owner.live(name)
    if (live === undefined || live.state.pending > 0) return undefined
    return live.state.meta.lastSeq
  }

  /** Highest seq of `name` written (maybe not yet fsynced in async mode). */
  committedSeq(name: string): number {
    return this.owner.live(name)?.state.meta.lastSeq ?? 0
  }

  /** Writes a checkpoint of `name` now; resolves with its seq. */
  async checkpoint(name: string, options: SignalOptions = {}): Promise<number> {
    this.context.checkOpen()
    const entry = await this.owner.entry(name, undefined, { mustExist: true, signal: options.signal })
    return this.context.committer.enqueue(checkpointUnit(this.context, entry))
  }

  // ---------------------------------------------------------------- answering sync

  /** The store's HLC now (a tick of it): every record logged before has an earlier time, every one logged after a later one. */
  clockNow(): HlcTimestamp {
    return this.context.clock.now()
  }

  /**
   * Resolves a test of whether a name may share a unit with another name
   * (it was in an `atomic` block or a remote commit of several names, or
   * the folder did not mark such names from its creation): an
   * anti-entropy answer keeps those in one bundle and may split the others
   * (persistence/names/joint-names.ts).
   */
  jointNames(): Promise<(name: string) => boolean> {
    this.context.checkOpen()
    return this.context.jointNames.tester()
  }

  /**
   * Document updates waiting for a missing dependency, over every name:
   * held now (updates, bytes), dropped over a budget and released since the
   * store opened. Dropped ones come again by anti-entropy.
   */
  waitingStats(): WaitingStats {
    return this.context.waitingBudget.stats()
  }

  /** The durability mode, when the last fsync happened, and how many batches were written and fsynced. */
  durability(): DurabilityStatus {
    const mode = this.context.options.durability ?? { mode: 'sync' }
    const { batches, syncs } = this.context.committer.stats
    const lastFsyncAt = this.context.committer.lastSyncAt ?? null
    return mode.mode === 'async'
      ? { mode: 'async', rpoMs: mode.rpoMs, lastFsyncAt, batches, fsyncs: syncs }
      : { mode: 'sync', lastFsyncAt, batches, fsyncs: syncs }
  }

  /** Stored names brought into the cache since the store opened: hydrated from storage, or taken back after eviction (statistics; new names are not counted). */
  get hydrations(): number {
    return this.owner.hydrations
  }

  /** Number of names hydrated and held by the store (statistics). */
  get cachedNames(): number {
    return this.owner.size
  }

  // ---------------------------------------------------------------- closing

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.context.closed
  }

  /** Checkpoints (per policy), flushes, and closes the storage it opened. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.doClose()
    return this.closing
  }

  private async doClose(): Promise<void> {
    const { context, owner } = this
    this.lifecycle.stop()
    // Checkpoints per policy, else metadata brought up to the log (persistence/lifecycle/close-writes.ts).
    await writeOnClose(context, owner)
    context.close()
    await context.committer.close()
    await this.seal.write()
    owner.clear()
    if (!this.ownsStorage) return
    // A small folder is compacted (its session's log written as compressed tables): about a quarter less disk after close.
    if (this.storage instanceof LevelStorage && context.options.compactOnClose !== false) await this.storage.compactIfSmall(COMPACT_ON_CLOSE)
    await this.storage.close()
  }
}
