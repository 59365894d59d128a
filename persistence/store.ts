/**
 * The store: named replicas persisted as an update log plus checkpoints.
 *
 * - `open(name, type)` hydrates a name (newest checkpoint + replay of the log
 *   after it, integrity-checked) and returns its replica. Every `change` of
 *   that replica (local or remote) is appended to the log through the commit
 *   pipeline (group commit; durability per mode).
 * - `applyRemote` / `commit` / `atomic` apply changes and resolve once they
 *   are durable per the mode; `commit` and `atomic` write several names in
 *   one atomic batch.
 * - History: `history`, `at`, `revert`, `changes`, `verify`.
 * - Lifecycle: checkpoints by policy, retention, TTL, archival, GC.
 *
 * This file is the facade; the work is done by the modules it wires over one
 * shared {@link StoreCore}: hydration.ts (opening, cache in name-cache.ts),
 * writes.ts (appends, checkpoints), time-travel.ts, archival.ts and
 * lifecycle.ts. See FORMAT.md for the key layout and value formats.
 */
import { isWellFormed } from '../crdt/codec.ts'
import { installAutomergeReloader } from './automerge-reload.ts'
import type { WaitingStats } from '../crdt/documents/waiting-room.ts'
import type { Emitter } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { HybridClock } from '../crdt/hlc.ts'
import { replicaId as brandReplicaId, type Replica, type ReplicaId, type ReplicaType } from '../crdt/replica.ts'
import { Archival } from './archival.ts'
import { Hydration } from './hydration.ts'
import { repairName, type RepairReport } from './repair.ts'
import { rollBack } from './rollback.ts'
import { acceptLoss, checkSeal, readLosses, writeSeal, type Loss } from './lifecycle/seal.ts'
import { STORE_INFO_KEY } from './format/keys.ts'
import { throwIfAborted } from './storage/storage.ts'
import { openLevelStorage } from './storage/level/open-level-storage.ts'
import { Lifecycle } from './lifecycle.ts'
import type { NameOptions, ReplicaCreator, StoreOptions } from './options.ts'
import type { SignalOptions, Storage } from './storage/storage.ts'
import { StoreCore } from './store-core.ts'
import { decodeStoreInfo, encodeStoreInfo, UNCLAIMED } from './format/store-info.ts'
import type { ApplyResult, ChangeProvenance, GcReport, HistoryEntry, NameInfo, StoreEvents, VerifyReport } from './store-types.ts'
import { TimeTravel } from './time-travel.ts'
import { Writes } from './writes.ts'
import { afterThisTurn } from './turn.ts'

export type { Loss } from './lifecycle/seal.ts'
export type { ApplyResult, ChangeProvenance, CommittedUnitRecord, GcReport, HistoryEntry, NameInfo, StoreEvents, VerifyReport } from './store-types.ts'

/**
 * Throws `CONCORD_INVALID_ARGUMENT` unless `name` is a non-empty string of
 * at most 1024 characters that is well-formed Unicode: a lone surrogate
 * would not survive UTF-8 (`'x\uD800'` and `'x\uDBFF'` would share a key).
 */
function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 1024 || !isWellFormed(name)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a name must be a non-empty, well-formed (no lone surrogate) string of at most 1024 characters')
  }
}

/** Opens a store (see {@link StoreOptions}). */
export async function openStore(options: StoreOptions): Promise<Store> {
  throwIfAborted(options.signal)
  // A wasm trap in Automerge reloads its module instead of leaving every document dead.
  installAutomergeReloader()
  const ownsStorage = options.storage === undefined
  const storage = options.storage ?? await openLevelStorage({ dir: options.dir, signal: options.signal })
  try {
    const id = brandReplicaId(String(options.replicaId))
    const now = options.now ?? Date.now
    const claim = options.claim ?? true
    const infoBytes = await storage.get(STORE_INFO_KEY)
    const info = infoBytes ? decodeStoreInfo(infoBytes) : undefined
    if (info !== undefined && info.replicaId !== UNCLAIMED && info.replicaId !== id) throw ownerMismatch(info.replicaId, id)
    // A new store, or one a maintenance tool created unclaimed: the first claiming opener owns it.
    if (info === undefined || (claim && info.replicaId === UNCLAIMED)) {
      const replicaId = claim ? id : UNCLAIMED
      await storage.batch([{ type: 'put', key: STORE_INFO_KEY, value: encodeStoreInfo({ replicaId, created: info?.created ?? now() }) }], { sync: true })
    }
    const defaults = options.createReplica === undefined || options.deltaMerger === undefined || options.checkDelta === undefined
      ? await import('./default-replicas.ts')
      : undefined
    const createReplica = options.createReplica ?? defaults!.defaultCreateReplica
    const deltaMerger = options.deltaMerger ?? defaults!.defaultDeltaMerger
    const checkDelta = options.checkDelta ?? defaults!.defaultDeltaChecker
    const store = new Store(storage, ownsStorage, id, createReplica, { ...options, deltaMerger, checkDelta })
    try {
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

/** An agent id given to a local change: a non-empty string of at most 256 characters, or undefined. */
function checkAgent(agent: unknown): string | undefined {
  if (agent === undefined) return undefined
  if (typeof agent !== 'string' || agent.length === 0 || agent.length > 256) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'an agent id must be a non-empty string of at most 256 characters')
  }
  return agent
}

/** The error of opening a store that belongs to another replica, saying how to proceed. */
function ownerMismatch(owner: string, id: string): ConcordError {
  return new ConcordError(ErrorCodes.INVALID_ARGUMENT,
    `this store belongs to replica "${owner}", not "${id}": a folder holds the data of one replica. ` +
    `Open it with id "${owner}", or give "${id}" a folder of its own (to start it with this data: ` +
    `concord export --dir THIS | concord import --dir NEW; the first peer that opens NEW owns it)`)
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
   * persistence/lifecycle/seal.ts). Each is also reported by a `lost` event right
   * after the store opens, fails `verify`, and stays recorded until
   * `repair(name)` accepts it ({@link recordedLosses}).
   */
  readonly losses: Loss[] = []
  private readonly core: StoreCore
  private readonly writes: Writes
  private readonly hydration: Hydration
  private readonly timeTravel: TimeTravel
  private readonly archival: Archival
  private readonly lifecycle: Lifecycle
  private closing: Promise<void> | undefined

  /** @internal use {@link openStore}. */
  constructor(
    /** The storage engine (bytes). */
    readonly storage: Storage,
    private readonly ownsStorage: boolean,
    /** The agent's replica id. */
    readonly replicaId: ReplicaId,
    createReplica: ReplicaCreator,
    options: StoreOptions,
  ) {
    const core = new StoreCore(storage, replicaId, createReplica, options)
    this.core = core
    this.events = core.events
    this.clock = core.clock
    this.truncations = core.truncations
    this.writes = new Writes(core)
    core.committer.onFailure = (error, states) => rollBack(core, this.writes, error, states)
    this.archival = new Archival(core, this.writes)
    this.hydration = new Hydration(core, this.writes, this.archival)
    this.timeTravel = new TimeTravel(core, this.hydration, this.writes)
    this.lifecycle = new Lifecycle(core, this.writes, this.archival)
    const sweepMs = options.sweepMs ?? 10_000
    if (sweepMs > 0) this.lifecycle.start(sweepMs)
  }

  // ---------------------------------------------------------------- opening

  private sealChecked = false

  /** The folder of a store on disk that opened its own storage: where its seal lives. */
  private get sealDir(): string | undefined {
    return this.ownsStorage ? this.core.options.dir : undefined
  }

  /** @internal on open: compares the seal with what LevelDB holds (persistence/lifecycle/seal.ts). */
  async checkSeal(): Promise<void> {
    const dir = this.sealDir
    if (dir === undefined) return
    const found = await checkSeal(this.core, dir)
    // Only a store whose seal was checked writes one on close: else it could cover up a loss not yet recorded.
    this.sealChecked = true
    if (found.length === 0) return
    this.losses.push(...found)
    // Reported once the caller holds the store (it subscribes right after open resolves).
    afterThisTurn(() => {
      for (const loss of found) {
        this.events.emit('lost', loss)
        const what = loss.fromSeq === 1 ? 'the whole name is missing' : `records ${loss.fromSeq}..${loss.toSeq} are missing`
        this.events.emit('error', { name: loss.name, error: new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${loss.name}": ${what}, although they were written before the last clean close (LevelDB lost the end of its log); peers resend what they hold, or restore the folder from a backup; \`concord repair\` accepts the loss`) })
      }
    })
  }

  /** Every loss found on an open ({@link losses}) and not yet accepted by `repair`. */
  async recordedLosses(options: SignalOptions = {}): Promise<Loss[]> {
    this.core.checkOpen()
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
    this.core.checkOpen()
    throwIfAborted(options.signal)
    checkName(name)
    const entry = await this.hydration.entry(name, type, options)
    await this.hydration.create(entry)
    return entry.replica
  }

  /** The type of a stored name, or undefined if it does not exist (archived names included). */
  async typeOf(name: string, options?: SignalOptions): Promise<ReplicaType | undefined> {
    this.core.checkOpen()
    return this.hydration.typeOf(name, options)
  }

  /** The version of an empty replica of `type` (what `deltaSince` takes to mean "everything"). */
  emptyVersion(type: ReplicaType): Uint8Array {
    return this.core.emptyVersion(type)
  }

  // ---------------------------------------------------------------- writing

  /**
   * Applies a remote delta to `name` and logs it; resolves once durable per
   * the name's mode. A delta that adds nothing is not logged (`changed:
   * false`). `type` is needed only when the name does not exist yet.
   */
  async applyRemote(name: string, delta: Uint8Array, options: { type?: ReplicaType; origin?: unknown; agent?: string } & SignalOptions = {}): Promise<ApplyResult> {
    const [result] = await this.commit([{ name, delta, type: options.type }], options)
    return result
  }

  /**
   * Applies deltas to several names and logs them as one atomic unit: after
   * a crash, either every record is there or none. Every delta is checked
   * against the document limits (`CONCORD_LIMIT_EXCEEDED`) and validated
   * (on a scratch replica) before any is applied.
   */
  async commit(deltas: ReadonlyArray<{ name: string; delta: Uint8Array; type?: ReplicaType }>, options: { origin?: unknown; agent?: string } & SignalOptions = {}): Promise<ApplyResult[]> {
    this.core.checkOpen()
    throwIfAborted(options.signal)
    // Deltas that would create a name are validated before any name is created,
    // so a refused commit leaves no empty name behind.
    for (const item of deltas) {
      checkName(item.name)
      if (!(item.delta instanceof Uint8Array)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a delta must be a Uint8Array')
      if (item.type !== undefined && !this.hydration.hydrated(item.name, item.type) &&
        (await this.typeOf(item.name, { signal: options.signal })) === undefined) {
        this.core.validateDelta(item.type, item.delta)
      }
    }
    const entries = []
    for (const item of deltas) {
      // A name the commit creates is stored with its first records, in the commit's batch.
      entries.push(this.hydration.hydrated(item.name, item.type) ?? await this.hydration.entry(item.name, item.type, { signal: options.signal }, true))
    }
    return this.writes.commitDeltas(entries, deltas, options)
  }

  /**
   * Runs `fn` (synchronous local mutations of opened replicas) and logs all
   * the changes it made as one atomic unit; resolves once durable. The
   * records name `agent` as their author (default: this replica), see
   * {@link ChangeProvenance}.
   */
  async atomic(fn: () => void, options: SignalOptions & ChangeProvenance = {}): Promise<ReadonlyArray<{ name: string; seq: number }>> {
    this.core.checkOpen()
    throwIfAborted(options.signal)
    return this.writes.atomic(fn, checkAgent(options.agent))
  }

  /** Resolves once every change so far is written and fsynced (whatever the mode). */
  async flush(options: SignalOptions = {}): Promise<void> {
    this.core.checkOpen()
    throwIfAborted(options.signal)
    await this.core.committer.flush()
  }

  /** Highest seq of `name` on stable storage (0 if none or not hydrated). */
  persistedSeq(name: string): number {
    return this.core.cache.live(name)?.state.durableSeq ?? 0
  }

  /**
   * The seq the live replica of `name` is exactly at: its newest logged
   * record, when no change of it waits to be logged. Undefined while one
   * waits, or when the name is not hydrated. `at(name, settledSeq)` is then
   * the replica's current state.
   */
  settledSeq(name: string): number | undefined {
    const live = this.core.cache.live(name)
    if (live === undefined || live.state.pending > 0) return undefined
    return live.state.meta.lastSeq
  }

  /** Highest seq of `name` written (maybe not yet fsynced in async mode). */
  committedSeq(name: string): number {
    return this.core.cache.live(name)?.state.meta.lastSeq ?? 0
  }

  /** Writes a checkpoint of `name` now; resolves with its seq. */
  async checkpoint(name: string, options: SignalOptions = {}): Promise<number> {
    this.core.checkOpen()
    const entry = await this.hydration.entry(name, undefined, { mustExist: true, signal: options.signal })
    return this.core.committer.enqueue(this.writes.checkpointUnit(entry))
  }

  // ---------------------------------------------------------------- reading history

  /** Records of `name`, oldest first from `from` (default: the first retained), at most `limit` (default 100). */
  history(name: string, options: { from?: number; limit?: number; reverse?: boolean } & SignalOptions = {}): Promise<HistoryEntry[]> {
    return this.timeTravel.history(name, options)
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
   * was at `seq`; it is logged and replicates like any change. Resolves with
   * the seq of the new record, or null when the value already equals it.
   */
  revert(name: string, seq: number, options: SignalOptions & ChangeProvenance = {}): Promise<number | null> {
    return this.timeTravel.revert(name, seq, { signal: options.signal, agent: checkAgent(options.agent) })
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
   * anew (persistence/repair.ts). A healthy name gives `repaired: false`;
   * a damaged name open in this store `CONCORD_LOCKED`.
   */
  async repair(name: string, options: SignalOptions = {}): Promise<RepairReport> {
    this.core.checkOpen()
    // A recorded loss (persistence/lifecycle/seal.ts) is accepted: verify stops failing for it.
    const loss = await acceptLoss(this.storage, name)
    if (loss !== undefined && await this.typeOf(name, options) === undefined) {
      return { name, repaired: true, reason: `accepted the loss of the whole name (records 1..${loss.toSeq})`, lostRecords: loss.toSeq }
    }
    const report = await repairName(this.core, name, options)
    if (loss === undefined) return report
    const reason = `accepted the loss of records ${loss.fromSeq}..${loss.toSeq}`
    return { ...report, repaired: true, reason: report.reason ? `${report.reason}; ${reason}` : reason, lostRecords: (report.lostRecords ?? 0) + loss.toSeq - loss.fromSeq + 1 }
  }

  /** Every stored name (archived ones included), in name order. */
  names(options: SignalOptions = {}): Promise<NameInfo[]> {
    return this.lifecycle.names(options)
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

  /** One background sweep: timed checkpoints, TTL expiry, archival of cold names. */
  sweep(options: SignalOptions = {}): Promise<void> {
    return this.lifecycle.sweep(options)
  }

  /**
   * Document updates waiting for a missing dependency, over every name:
   * held now (updates, bytes), dropped over a budget and released since the
   * store opened. Dropped ones come again by anti-entropy.
   */
  waitingStats(): WaitingStats {
    return this.core.waitingBudget.stats()
  }

  /** Number of names hydrated and held by the store (statistics). */
  get cachedNames(): number {
    return this.core.cache.size
  }

  // ---------------------------------------------------------------- closing

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.core.isClosed
  }

  /** Checkpoints (per policy), flushes, and closes the storage it opened. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.doClose()
    return this.closing
  }

  private async doClose(): Promise<void> {
    const { core } = this
    this.lifecycle.stop()
    await Promise.allSettled([...core.cache.opening.values()])
    const live = core.cache.allLive()
    const checkpoints: Promise<unknown>[] = []
    for (const entry of live) {
      const { state } = entry
      if (entry.policy.onClose && state.meta.lastSeq > (state.meta.checkpoints.at(-1)?.seq ?? 0)) {
        checkpoints.push(core.committer.enqueue(this.writes.checkpointUnit(entry)).catch(() => undefined))
      } else if (state.metaBehind) {
        // Bring the stored metadata up to the log, so the next open has no tail to derive.
        checkpoints.push(core.committer.enqueue({
          sync: false, states: [state], build: (b) => b.setMeta(state, b.meta(state)),
        }).catch(() => undefined))
      }
    }
    await Promise.all(checkpoints)
    core.isClosed = true
    for (const wake of core.waiters) wake()
    await core.committer.close()
    const dir = this.sealDir
    if (dir !== undefined && this.sealChecked) {
      // Everything is written: the seal records it (a failure leaves a stale seal, which says nothing).
      await writeSeal(core, dir).catch(() => undefined)
    }
    for (const entry of live) {
      entry.detached = true
      entry.unsubscribe()
    }
    core.cache.clear()
    if (this.ownsStorage) await this.storage.close()
  }
}
