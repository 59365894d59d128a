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
 * - history/ (`history`, `at`, `revert`, `changes`, `verify`, `repair`);
 * - lifecycle/ (`names`, `delete`, TTL, `gc`, the sweep, archival, the seal);
 * - pipeline/ (the commit queue under all of them): `flush`, durability.
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
import { repairName, type RepairReport } from './history/repair.ts'
import type { BlameReport } from './history/blame.ts'
import { type DiffReport, type HistoryPage, type HistoryQuery, MAX_HISTORY_SCAN, Queries } from './history/queries.ts'
import { type RecordRun, type RecordRunLimits, recordsSince } from './history/answer-records.ts'
import { type RestorePoint, type RestoreReport, restoreTo } from './history/restore.ts'
import { type RevertSelection, revertAgent } from './history/selective-revert.ts'
import { TimeTravel } from './history/time-travel.ts'
import { Archival } from './lifecycle/archival.ts'
import { Lifecycle } from './lifecycle/lifecycle.ts'
import type { RetentionReport } from './lifecycle/log-archive.ts'
import { LevelStorage } from './storage/level/level-storage.ts'
import { acceptLoss, readLosses, type Loss } from './lifecycle/seal.ts'
import { StoreSeal } from './lifecycle/store-seal.ts'
import { checkName } from './names/check-name.ts'
import { Names, type NameLease } from './names/owner.ts'
import { storedDeltas, type StoredWanted } from './names/stored-state.ts'
import { checkRetention, type NameOptions, type ReplicaCreator, type StoreOptions } from './options.ts'
import { openLevelStorage } from './storage/level/open-level-storage.ts'
import { MemoryStorage } from './storage/memory-storage.ts'
import { throwIfAborted, type SignalOptions, type Storage } from './storage/storage.ts'
import type {
  ApplyResult,
  ChangeProvenance,
  DurabilityStatus,
  GcReport,
  HistoryEntry,
  NameInfo,
  NamePage,
  NamePageOptions,
  StoreEvents,
  VerifyReport,
} from './store-types.ts'
import { checkpointUnit } from './writes/checkpoints.ts'
import { RemoteCommits, type RemoteCommitOptions, type RemoteDelta } from './writes/remote-commit.ts'
import { Writes } from './writes/writes.ts'

export type { Loss } from './lifecycle/seal.ts'
export type { NameLease } from './names/owner.ts'
export type * from './store-types.ts'

/**
 * How long {@link Store.recordsSince} waits for changes applied and not yet
 * logged to be written before it reads the log (sync/PROTOCOL.md "Answers
 * made of records": an answer never waits long for the disk).
 */
export const RECORDS_WRITE_WAIT_MS = 250

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
export class Store {
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
  private readonly context: StoreContext
  private readonly owner: Names
  private readonly writes: Writes
  private readonly remoteCommits: RemoteCommits
  private readonly timeTravel: TimeTravel
  private readonly queries: Queries
  private readonly archival: Archival
  private readonly lifecycle: Lifecycle
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
    this.context = context
    this.owner = owner
    this.writes = writes
    this.remoteCommits = new RemoteCommits(context, owner, writes)
    // The folder of a store on disk that opened its own storage: where its seal lives.
    this.seal = new StoreSeal(context, owner, ownsStorage ? options.dir : undefined)
    this.archival = archival
    this.timeTravel = new TimeTravel(context, owner, writes)
    this.queries = new Queries(context, owner, this.timeTravel)
    this.lifecycle = new Lifecycle(context, owner, archival)
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

  // ---------------------------------------------------------------- reading history

  /**
   * Records of `name`, oldest first from `from` (default: the first kept,
   * archived ones included), at most `limit` (default 100); newest first
   * when `reverse`. With `agent`, `since` or `until` (ms, the record's HLC
   * wall time), only the records that match among the next
   * {@link MAX_HISTORY_SCAN}: use {@link historyPage} to page on.
   */
  async history(name: string, options: HistoryQuery = {}): Promise<HistoryEntry[]> {
    if (options.agent === undefined && options.since === undefined && options.until === undefined && options.cursor === undefined) {
      return this.timeTravel.history(name, options)
    }
    return (await this.queries.historyPage(name, options)).entries
  }

  /**
   * A page of `name`'s records matching `query` (author, time window,
   * direction), with the `cursor` of the next page when there is more.
   */
  historyPage(name: string, query: HistoryQuery = {}): Promise<HistoryPage> {
    return this.queries.historyPage(name, query)
  }

  /**
   * What changed in `name` from right after record `fromSeq` (0: the
   * empty state) to right after `toSeq` (default: the last), as structured
   * data per type: a text's inserted and deleted spans, a map's JSON Patch
   * and changed keys, a set's added and removed elements, a counter's delta
   * per author; with the records in between (author, time, message).
   */
  diff(name: string, fromSeq: number, toSeq?: number, options: SignalOptions = {}): Promise<DiffReport> {
    return this.queries.diff(name, fromSeq, toSeq, options)
  }

  /**
   * Writes the whole store as it was at `at` (an HLC, or a wall-clock time
   * in ms) to a new folder `dir`: every name cut after its last record at or
   * before that time, its records copied as they are (persistence/history/
   * restore.ts). The copy is unclaimed: open it with a new agent id.
   */
  restoreTo(dir: string, options: { at: RestorePoint } & SignalOptions): Promise<RestoreReport> {
    return restoreTo(this.context, this.owner, dir, options)
  }

  /**
   * Who wrote what `name` holds now: a Yjs text span by span (the record
   * and author that inserted each), map and register fields by who set
   * them last, a counter's contribution per author, a set's elements by
   * who added them; replaying the newest `limit` records (default 500).
   */
  blame(name: string, options: { field?: string; limit?: number } & SignalOptions = {}): Promise<BlameReport> {
    return this.queries.blame(name, options)
  }

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
   * The records of `name` that a replica at `since` lacks, oldest first,
   * given `lack` (what it lacks: `deltaSince(since)` of the current state),
   * for an anti-entropy answer made of records (sync/PROTOCOL.md); undefined
   * when they cannot be told or exceed `limits` (the answer is then merged
   * state). Changes applied here and not yet logged are written first;
   * with `until`, records logged after it are left out.
   */
  async recordsSince(name: string, since: Uint8Array, lack: Uint8Array, limits: RecordRunLimits): Promise<RecordRun | undefined> {
    this.context.checkOpen()
    const type = this.owner.knownType(name)
    if (type === undefined) return undefined
    if (this.owner.live(name) !== undefined && this.settledSeq(name) === undefined) await this.writtenWithin(RECORDS_WRITE_WAIT_MS)
    return recordsSince(this.context, this.owner, name, type, since, lack, limits)
  }

  /**
   * Resolves once what is queued is written, or after `ms` (a write held
   * up, say by a slow fsync: what is not logged yet is then not read, and
   * an answer falls back to merged state rather than wait for the disk).
   */
  private writtenWithin(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.context.timers.setTimeout(resolve, ms)
      this.context.committer.written().then(
        () => {
          this.context.timers.clearTimeout(timer)
          resolve()
        },
        () => {
          this.context.timers.clearTimeout(timer)
          resolve()
        },
      )
    })
  }

  /**
   * The replica as it was right after record `seq` (0 = empty), rebuilt from
   * the nearest checkpoint at or before it. A detached copy: changing it
   * changes nothing stored.
   */
  at(name: string, seq: number, options: SignalOptions = {}): Promise<Replica> {
    return this.timeTravel.at(name, seq, options)
  }

  /**
   * Makes a new local change of `name` that brings its value back to what it
   * was at `seq`; or, given `{ agent, since }`, that undoes that agent's
   * changes since that time (ms) where the type allows it (Yjs texts, PN
   * counters, OR-sets, registers, flags, OR-map keys: see
   * persistence/history/selective-revert.ts). It is logged and replicates
   * like any change. Resolves with the seq of the new record, or null when
   * there was nothing to change.
   */
  async revert(name: string, target: number | RevertSelection, options: SignalOptions & ChangeProvenance = {}): Promise<number | null> {
    const provenance = { signal: options.signal, ...encodeProvenance(options) }
    if (typeof target === 'number') return this.timeTravel.revert(name, target, provenance)
    return (await revertAgent(this.context, this.owner, this.timeTravel, this.writes, name, target, provenance)).seq
  }

  /**
   * The records of `name` from `since` (default: the first retained), then
   * live as new ones commit. Ends when `signal` aborts or the store closes.
   */
  changes(name: string, options: { since?: number } & SignalOptions = {}): AsyncGenerator<HistoryEntry> {
    return this.timeTravel.changes(name, options)
  }

  /**
   * Checks `name`: every retained record's checksum, seq and hash chain, every
   * checkpoint against its record, and that replaying the log from the start
   * (where retained, else from the oldest checkpoint) gives each checkpoint's
   * state and the live state.
   */
  verify(name: string, options: SignalOptions = {}): Promise<VerifyReport> {
    return this.timeTravel.verify(name, options)
  }

  /**
   * Repairs a name whose log is damaged in the middle (opening it fails
   * with `CONCORD_CORRUPT_RECORD`): keeps the newest usable checkpoint and
   * the intact records before the damage, drops the damaged records and
   * writes every intact record after them again, renumbered and chained
   * anew (persistence/history/repair.ts). A healthy name gives `repaired:
   * false`; a damaged name open in this store `CONCORD_LOCKED`.
   */
  async repair(name: string, options: SignalOptions = {}): Promise<RepairReport> {
    this.context.checkOpen()
    // A recorded loss (persistence/lifecycle/seal.ts) is accepted: verify stops failing for it.
    const loss = await acceptLoss(this.storage, name)
    if (loss !== undefined && (await this.typeOf(name, options)) === undefined) {
      return { name, repaired: true, reason: `accepted the loss of the whole name (records 1..${loss.toSeq})`, lostRecords: loss.toSeq }
    }
    const report = await repairName(this.context, this.owner, name, options)
    if (loss === undefined) return report
    const reason = `accepted the loss of records ${loss.fromSeq}..${loss.toSeq}`
    return {
      ...report,
      repaired: true,
      reason: report.reason ? `${report.reason}; ${reason}` : reason,
      lostRecords: (report.lostRecords ?? 0) + loss.toSeq - loss.fromSeq + 1,
    }
  }

  /** Every stored name (archived ones included), in name order. For many names, {@link pageNames}. */
  names(options: SignalOptions = {}): Promise<NameInfo[]> {
    return this.lifecycle.list(options)
  }

  /**
   * A page of the stored names (archived ones included) in key order (by
   * code point): up to `limit` (default 100) of those starting with
   * `prefix`, after `cursor`, for which `where` holds, and the cursor of the
   * next page. Reads about as many names as it returns (plus those `where`
   * leaves out), whatever the store holds.
   */
  pageNames(options: NamePageOptions = {}): Promise<NamePage> {
    return this.lifecycle.page(options)
  }

  // ---------------------------------------------------------------- lifecycle

  /** Deletes `name` and all its data (an opened replica of it stops being persisted). */
  delete(name: string, options: SignalOptions = {}): Promise<boolean> {
    return this.lifecycle.delete(name, options)
  }

  /**
   * Expires every name untouched (no write) for its TTL and not among the
   * recently used names kept in memory: its data is deleted, and a replica of
   * it still held by the application stops being persisted. Runs in the
   * background sweep; returns the names. `dryRun`: returns the names that
   * would expire and deletes nothing; `only`: considers these names only.
   */
  expire(options: SignalOptions & { readonly dryRun?: boolean; readonly only?: readonly string[] } = {}): Promise<string[]> {
    return this.lifecycle.expire(options)
  }

  /**
   * Moves `name` to a compressed archive file beside the database and deletes
   * it from LevelDB; `open` brings it back transparently. A replica of it held
   * open stops being persisted (open it again after).
   */
  archive(name: string, options: SignalOptions = {}): Promise<string> {
    return this.archival.archive(name, options)
  }

  /** Archives every name untouched for `archive.afterMs` (and not among the recently used names in memory). */
  archiveCold(options: SignalOptions = {}): Promise<string[]> {
    return this.archival.archiveCold(options)
  }

  /**
   * Garbage collection: deletes records older than each name's retained
   * range, checkpoints no longer listed, and keys of names that no longer
   * exist (left over from an interrupted deletion).
   */
  gc(options: SignalOptions = {}): Promise<GcReport> {
    return this.lifecycle.gc(options)
  }

  /**
   * Applies `name`'s time-window retention now (`{ archiveAfterMs }` moves
   * the records older than the window and before a checkpoint to the
   * archive tier, `{ deleteAfterMs }` deletes them; the sweep does this for
   * every hydrated name). Resolves with the records moved or deleted.
   */
  applyRetention(name: string, options: SignalOptions = {}): Promise<RetentionReport> {
    return this.lifecycle.applyRetention(name, options)
  }

  /** One background sweep: timed checkpoints, time-window retention of hydrated names, TTL expiry, archival of cold names. */
  sweep(options: SignalOptions = {}): Promise<void> {
    return this.lifecycle.sweep(options)
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
    await owner.settled()
    // What is queued (a change made just before close) is written first, so that each name's metadata below is brought up to its whole log.
    await context.committer.written().catch(() => undefined)
    const writes: Promise<unknown>[] = []
    for (const entry of owner.allLive()) {
      const { state } = entry
      if (entry.policy.onClose && state.meta.lastSeq > (state.meta.checkpoints.at(-1)?.seq ?? 0) && state.meta.logBytes >= entry.policy.minBytes) {
        writes.push(context.committer.enqueue(checkpointUnit(context, entry)).catch(() => undefined))
      } else if (state.metaBehind) {
        // Bring the stored metadata up to the log, so the next open has no tail to derive.
        writes.push(
          context.committer
            .enqueue({
              sync: false,
              states: [state],
              build: (b) => b.setMeta(state, b.meta(state)),
            })
            .catch(() => undefined),
        )
      }
    }
    await Promise.all(writes)
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
