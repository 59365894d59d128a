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
 * See FORMAT.md for the key layout and value formats.
 */
import { bytesEqual } from '../crdt/codec.ts'
import { Emitter } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError, TypeMismatchError } from '../crdt/errors.ts'
import { HybridClock, type HlcTimestamp } from '../crdt/hlc.ts'
import { replicaId as brandReplicaId, type Replica, type ReplicaId, type ReplicaType } from '../crdt/replica.ts'
import { decodeArchiveMarker, readArchive, writeArchive, type ArchiveMarker } from './archive.ts'
import { encodeCheckpoint } from './checkpoint.ts'
import { toHex, ZERO_HASH } from './checksum.ts'
import { Committer, realTimers, type BatchBuilder, type CommittedRecord, type NameState, type Timers, type Unit } from './committer.ts'
import { archiveKey, ARCHIVE_PREFIX, checkpointKey, checkpointPrefix, logKey, logPrefix, META_PREFIX, metaKey, parseSeqKey, STORE_INFO_KEY } from './keys.ts'
import { openLevelStorage, throwIfAborted } from './level/level-storage.ts'
import { decodeMeta, newMeta, type NameMeta } from './name-meta.ts'
import {
  DEFAULT_CHECKPOINT, DEFAULT_RETENTION, FULL_RETENTION_CHECKPOINTS,
  type CheckpointPolicy, type Durability, type NameOptions, type ReplicaCreator, type Retention, type Schema, type StoreOptions,
} from './options.ts'
import { loadCheckpoint, rebuild } from './replay.ts'
import { decodeRecord } from './record.ts'
import type { SignalOptions, Storage, StorageOperation } from './storage.ts'
import { decodeStoreInfo, encodeStoreInfo } from './store-info.ts'

/** One record as `history` and `changes` return it. */
export interface HistoryEntry {
  readonly name: string
  readonly seq: number
  readonly hlc: HlcTimestamp
  readonly agent: string
  /** `delta`, or `state` (a full-state record written to repair a failed write). */
  readonly kind: 'delta' | 'state'
  /** The payload (delta bytes). */
  readonly bytes: Uint8Array
  /** SHA-256 of the record, hex. */
  readonly hash: string
  /** Encoded size of the record in bytes. */
  readonly size: number
}

/** A name as `names()` lists it. */
export interface NameInfo {
  readonly name: string
  readonly type: ReplicaType
  /** Records retained in the log. */
  readonly records: number
  /** Seq of the newest record. */
  readonly lastSeq: number
  /** Bytes recovery reads: newest checkpoint + records after it. */
  readonly size: number
  /** Wall time (ms) of the last write. */
  readonly lastChange: number
  readonly checkpoints: number
  readonly schema: number
  /** True when the name lives in an archive file (rehydrated on open). */
  readonly archived: boolean
}

/** Result of `verify(name)`. */
export interface VerifyReport {
  readonly name: string
  readonly ok: boolean
  readonly firstSeq: number
  readonly lastSeq: number
  readonly records: number
  readonly checkpoints: number
  /** What is wrong, empty when ok. */
  readonly problems: readonly string[]
}

/** Events of a store. */
export interface StoreEvents extends Record<string, unknown> {
  /** A record was written (in sync mode: and fsynced). */
  commit: HistoryEntry
  /**
   * One unit (a local change, an `atomic` block, a `commit` call) is durable
   * per its mode; its records belong together. `origin` is what the caller of
   * `commit`/`applyRemote` passed (undefined for local changes). Sync ships
   * units from here, so peers get changes only after they are logged.
   */
  committed: { readonly records: readonly CommittedUnitRecord[]; readonly origin?: unknown }
  /** Records of `name` up to `seq` are on stable storage. */
  durable: { readonly name: string; readonly seq: number }
  /** A damaged tail of a name's log was dropped on open. */
  truncated: { readonly name: string; readonly fromSeq: number; readonly toSeq: number; readonly reason: string }
  /** A checkpoint was written. */
  checkpoint: { readonly name: string; readonly seq: number; readonly size: number }
  /** A name was expired (TTL) and its data deleted. */
  expired: { readonly name: string }
  /** A name was moved to an archive file. */
  archived: { readonly name: string; readonly file: string }
  /** An archived name was brought back. */
  rehydrated: { readonly name: string }
  /** A name's data was migrated to a newer schema version. */
  migrated: { readonly name: string; readonly from: number; readonly to: number }
  /** A background failure (a change that could not be logged, a failed sweep). */
  error: { readonly name?: string; readonly error: ConcordError }
}

/** One record of a committed unit (see the `committed` event). */
export interface CommittedUnitRecord {
  readonly name: string
  readonly type: ReplicaType
  readonly seq: number
  /** The delta (or, for a `state` record, the whole state as a delta). */
  readonly payload: Uint8Array
}

/** Result of `applyRemote`. */
export interface ApplyResult {
  /** False when the delta added nothing (it was not logged). */
  readonly changed: boolean
  /** The seq of the record written, or the current seq when nothing changed. */
  readonly seq: number
}

/** Result of `gc()`. */
export interface GcReport {
  readonly deletedRecords: number
  readonly deletedCheckpoints: number
  readonly orphanNames: number
}

interface Entry {
  readonly name: string
  readonly state: NameState
  readonly replica: Replica
  readonly durability: Durability
  readonly policy: Required<CheckpointPolicy>
  readonly retention: Retention
  /** Write a full-state record first (a write of this name failed). */
  repair: boolean
  checkpointQueued: boolean
  /** Wall time of the first change not in a checkpoint (0 = none). */
  dirtySince: number
  detached: boolean
  unsubscribe: () => void
  /** The last append of a change made outside applyRemote/commit/atomic. */
  last: Promise<unknown>
}

interface CaptureItem {
  readonly entry: Entry
  readonly delta: Uint8Array
  readonly hlc: HlcTimestamp
  readonly agent: string
}

const PAGE = 256

/** Opens a store (see {@link StoreOptions}). */
export async function openStore(options: StoreOptions): Promise<Store> {
  throwIfAborted(options.signal)
  const ownsStorage = options.storage === undefined
  const storage = options.storage ?? await openLevelStorage({ dir: options.dir, signal: options.signal })
  try {
    const id = brandReplicaId(String(options.replicaId))
    const now = options.now ?? Date.now
    const infoBytes = await storage.get(STORE_INFO_KEY)
    if (infoBytes) {
      const info = decodeStoreInfo(infoBytes)
      if (info.replicaId !== id) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `this store belongs to replica "${info.replicaId}", not "${id}"`)
      }
    } else {
      await storage.batch([{ type: 'put', key: STORE_INFO_KEY, value: encodeStoreInfo({ replicaId: id, created: now() }) }], { sync: true })
    }
    const createReplica = options.createReplica ?? (await import('./default-replicas.ts')).defaultCreateReplica
    return new Store(storage, ownsStorage, id, createReplica, options)
  } catch (error) {
    if (ownsStorage) await storage.close().catch(() => undefined)
    throw error
  }
}

/** A store of named, persisted replicas. Create it with {@link openStore}. */
export class Store {
  /** Store events (commit, durable, truncated, checkpoint, expired, archived, ...). */
  readonly events = new Emitter<StoreEvents>()
  /** The agent's clock (shared with the replicas it creates). */
  readonly clock: HybridClock
  private readonly committer: Committer
  private readonly cache = new Map<string, Entry>()
  private readonly evicted = new Map<string, WeakRef<Entry>>()
  private readonly opening = new Map<string, Promise<Entry>>()
  private readonly cleanup = new FinalizationRegistry<string>((name) => {
    const ref = this.evicted.get(name)
    if (ref && ref.deref() === undefined) this.evicted.delete(name)
  })
  private capture: CaptureItem[] | undefined
  /** Waiting `changes()` iterators, woken on close. */
  private readonly waiters = new Set<() => void>()
  private readonly emptyVersions = new Map<ReplicaType, Uint8Array>()
  private readonly now: () => number
  private readonly timers: Timers
  private sweepTimer: unknown
  private isClosed = false
  private closing: Promise<void> | undefined
  /** Reports of damaged tails dropped since the store opened. */
  readonly truncations: Array<{ name: string; fromSeq: number; toSeq: number; reason: string }> = []

  /** @internal use {@link openStore}. */
  constructor(
    /** The storage engine (bytes). */
    readonly storage: Storage,
    private readonly ownsStorage: boolean,
    /** The agent's replica id. */
    readonly replicaId: ReplicaId,
    private readonly createReplica: ReplicaCreator,
    private readonly options: StoreOptions,
  ) {
    this.clock = options.clock ?? new HybridClock()
    this.now = options.now ?? Date.now
    this.timers = options.timers ?? realTimers
    const durability = options.durability ?? { mode: 'sync' }
    this.committer = new Committer(storage, { rpoMs: durability.mode === 'async' ? durability.rpoMs : 100, timers: this.timers })
    this.committer.events.on('commit', ({ records }) => {
      if (this.events.listenerCount('commit') === 0) return
      for (const record of records) this.events.emit('commit', toHistoryEntry(record))
    })
    this.committer.events.on('durable', ({ names }) => {
      for (const item of names) this.events.emit('durable', item)
      this.evictIfNeeded()
    })
    this.committer.events.on('failure', ({ states }) => {
      for (const state of states) {
        const entry = this.liveEntry(state.meta.name)
        if (entry && entry.state === state) entry.repair = true
      }
    })
    const sweepMs = options.sweepMs ?? 10_000
    if (sweepMs > 0) this.scheduleSweep(sweepMs)
  }

  // ---------------------------------------------------------------- opening

  /**
   * Opens (creating it if needed) the replica `name` of `type`. Throws
   * `TypeMismatchError` when the name exists with another type,
   * `CONCORD_CORRUPT_RECORD` when its log is damaged in the middle,
   * `CONCORD_SCHEMA_TOO_NEW` / `CONCORD_MIGRATION_FAILED` for schema problems.
   */
  async open(name: string, type: ReplicaType, options: NameOptions = {}): Promise<Replica> {
    this.checkOpen()
    throwIfAborted(options.signal)
    if (typeof name !== 'string' || name.length === 0 || name.length > 1024) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a name must be a non-empty string of at most 1024 characters')
    }
    const entry = await this.entry(name, type, options)
    return entry.replica
  }

  /** The type of a stored name, or undefined if it does not exist (archived names included). */
  async typeOf(name: string, options?: SignalOptions): Promise<ReplicaType | undefined> {
    this.checkOpen()
    const live = this.liveEntry(name)
    if (live) return live.state.meta.type
    const meta = await this.readMeta(name, options?.signal)
    if (meta) return meta.type
    const marker = await this.storage.get(archiveKey(name), options)
    return marker ? decodeArchiveMarker(marker).type : undefined
  }

  private liveEntry(name: string): Entry | undefined {
    const cached = this.cache.get(name)
    if (cached) return cached
    const entry = this.evicted.get(name)?.deref()
    if (entry && !entry.detached) return entry
    return undefined
  }

  private async entry(name: string, type: ReplicaType | undefined, options: NameOptions): Promise<Entry> {
    let entry = this.cache.get(name)
    if (entry) {
      this.cache.delete(name)
      this.cache.set(name, entry)
    } else {
      entry = this.evicted.get(name)?.deref()
      if (entry && !entry.detached) {
        this.evicted.delete(name)
        this.cache.set(name, entry)
        this.evictIfNeeded()
      } else {
        let pending = this.opening.get(name)
        if (!pending) {
          pending = this.hydrate(name, type, options).finally(() => this.opening.delete(name))
          this.opening.set(name, pending)
        }
        entry = await pending
      }
    }
    if (type !== undefined && entry.state.meta.type !== type) throw new TypeMismatchError(name, type, entry.state.meta.type)
    return entry
  }

  private newReplica(type: ReplicaType, snapshot?: Uint8Array): Replica {
    return this.createReplica(type, { replicaId: this.replicaId, clock: this.clock, snapshot })
  }

  private async readMeta(name: string, signal?: AbortSignal): Promise<NameMeta | undefined> {
    const bytes = await this.storage.get(metaKey(name), { signal })
    if (!bytes) return undefined
    const meta = decodeMeta(bytes)
    if (meta.name !== name) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `metadata stored under "${name}" belongs to "${meta.name}"`)
    return meta
  }

  private async hydrate(name: string, type: ReplicaType | undefined, options: NameOptions): Promise<Entry> {
    let meta = await this.readMeta(name, options.signal)
    if (!meta) {
      if (await this.rehydrateArchive(name, options.signal)) meta = await this.readMeta(name, options.signal)
    }
    const schema = options.schema ?? this.options.schema ?? { version: 0 }
    let created = false
    if (!meta) {
      if (options.mustExist || type === undefined) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
      meta = newMeta(name, type, schema.version, this.now(), options.ttlMs ?? 0)
      created = true
    }
    if (type !== undefined && meta.type !== type) throw new TypeMismatchError(name, type, meta.type)
    if (meta.schema > schema.version) {
      throw new ConcordError(ErrorCodes.SCHEMA_TOO_NEW, `"${name}" was written with schema version ${meta.schema}; this code knows up to ${schema.version}`)
    }
    const state: NameState = { meta, durableSeq: meta.lastSeq, pending: 0 }
    let replica: Replica
    if (created) {
      replica = this.newReplica(meta.type)
    } else {
      const rebuilt = await rebuild({
        storage: this.storage, meta, target: meta.lastSeq, allowTornTail: true, signal: options.signal,
        create: (snapshot) => this.newReplica(meta!.type, snapshot),
      })
      replica = rebuilt.replica
      if (rebuilt.torn) {
        await this.truncate(state, rebuilt.seq, rebuilt.hash, rebuilt.torn)
      }
    }
    const entry: Entry = {
      name, state, replica,
      durability: options.durability ?? this.options.durability ?? { mode: 'sync' },
      policy: { ...DEFAULT_CHECKPOINT, ...this.options.checkpoint, ...options.checkpoint },
      retention: options.retention ?? this.options.retention ?? DEFAULT_RETENTION,
      repair: false, checkpointQueued: false, dirtySince: 0, detached: false,
      unsubscribe: () => undefined, last: Promise.resolve(),
    }
    if (!created && state.meta.lastSeq > (state.meta.checkpoints.at(-1)?.seq ?? 0)) entry.dirtySince = this.now()
    const ttlChange = options.ttlMs !== undefined && options.ttlMs !== state.meta.ttlMs
    if (created || ttlChange) {
      await this.committer.enqueue({
        sync: true, states: [state],
        build: (b) => b.setMeta(state, { ...b.meta(state), ttlMs: options.ttlMs ?? b.meta(state).ttlMs }),
      })
    }
    entry.unsubscribe = replica.events.on('change', (event) => this.onChange(entry, event.delta))
    if (state.meta.schema < schema.version) await this.migrate(entry, schema)
    this.cache.set(name, entry)
    this.evictIfNeeded()
    return entry
  }

  private async truncate(state: NameState, seq: number, hash: Uint8Array, torn: { fromSeq: number; toSeq: number; reason: string }): Promise<void> {
    const name = state.meta.name
    // Delete every key from the damaged record on (including any beyond the metadata).
    const doomed: StorageOperation[] = []
    for await (const key of this.storage.keys({ prefix: logPrefix(name), gte: logKey(name, torn.fromSeq) })) doomed.push({ type: 'del', key })
    await this.committer.enqueue({
      sync: true, states: [state],
      build: (b) => {
        for (const op of doomed) b.del(op.key)
        const meta = b.meta(state)
        b.setMeta(state, {
          ...meta, lastSeq: seq, lastHash: hash, firstSeq: Math.min(meta.firstSeq, seq + 1),
          checkpoints: meta.checkpoints.filter((cp) => cp.seq <= seq),
        })
      },
    })
    state.durableSeq = seq
    const report = { name, fromSeq: torn.fromSeq, toSeq: torn.toSeq, reason: torn.reason }
    this.truncations.push(report)
    this.events.emit('truncated', report)
  }

  private async migrate(entry: Entry, schema: Schema): Promise<void> {
    const from = entry.state.meta.schema
    const items: CaptureItem[] = []
    const previous = this.capture
    this.capture = items
    try {
      for (let version = from + 1; version <= schema.version; version++) {
        const step = schema.migrations?.[version]
        if (!step) throw new ConcordError(ErrorCodes.MIGRATION_FAILED, `"${entry.name}": no migration to schema version ${version}`)
        try {
          step(entry.replica, { name: entry.name, from: version - 1, to: version })
        } catch (error) {
          throw new ConcordError(ErrorCodes.MIGRATION_FAILED, `"${entry.name}": migration to version ${version} failed: ${(error as Error)?.message}`, { cause: error })
        }
      }
    } catch (error) {
      entry.unsubscribe()
      entry.detached = true
      throw error
    } finally {
      this.capture = previous
    }
    await this.committer.enqueue({
      sync: entry.durability.mode === 'sync', states: [entry.state],
      build: (b) => {
        this.buildAppends(b, items)
        b.setMeta(entry.state, { ...b.meta(entry.state), schema: schema.version })
      },
    })
    this.events.emit('migrated', { name: entry.name, from, to: schema.version })
  }

  // ---------------------------------------------------------------- writing

  private onChange(entry: Entry, delta: Uint8Array): void {
    if (entry.detached) {
      this.events.emit('error', { name: entry.name, error: new ConcordError(ErrorCodes.CLOSED, `"${entry.name}" was expired, archived or the store closed: a change was not persisted`) })
      return
    }
    const item: CaptureItem = { entry, delta, hlc: this.clock.now(), agent: this.replicaId }
    if (this.capture) {
      this.capture.push(item)
      return
    }
    const promise = this.enqueueItems([item])
    entry.last = promise.catch((error) => {
      this.events.emit('error', { name: entry.name, error: isConcordError(error) ? error : new ConcordError(ErrorCodes.STORAGE_ERROR, String(error)) })
    })
  }

  /** The version of an empty replica of `type` (what `deltaSince` takes to mean "everything"). */
  emptyVersion(type: ReplicaType): Uint8Array {
    let version = this.emptyVersions.get(type)
    if (!version) this.emptyVersions.set(type, (version = this.newReplica(type).version()))
    return version
  }

  private buildAppends(b: BatchBuilder, items: readonly CaptureItem[]): CommittedRecord[] {
    const now = this.now()
    const records: CommittedRecord[] = []
    for (const item of items) {
      const { entry } = item
      if (entry.repair) {
        // A write of this name failed: its replica may hold changes the log lacks.
        entry.repair = false
        const full = entry.replica.deltaSince(this.emptyVersion(entry.state.meta.type))
        if (full) b.append(entry.state, { payload: full, hlc: item.hlc, agent: this.replicaId, kind: 'state', now })
      }
      records.push(b.append(entry.state, { payload: item.delta, hlc: item.hlc, agent: item.agent, now }))
    }
    const entries = new Set(items.map((item) => item.entry))
    b.onCommit(() => {
      for (const entry of entries) this.afterWrite(entry)
    })
    return records
  }

  private async enqueueItems(items: readonly CaptureItem[], origin?: unknown): Promise<CommittedRecord[]> {
    const entries = [...new Set(items.map((item) => item.entry))]
    const types = new Map(entries.map((entry) => [entry.name, entry.state.meta.type]))
    const records = await this.committer.enqueue({
      sync: entries.some((entry) => entry.durability.mode === 'sync'),
      states: entries.map((entry) => entry.state),
      build: (b) => this.buildAppends(b, items),
    })
    if (this.events.listenerCount('committed') > 0) {
      this.events.emit('committed', {
        origin,
        records: records.map((r) => ({ name: r.name, type: types.get(r.name)!, seq: r.seq, payload: r.payload })),
      })
    }
    return records
  }

  private afterWrite(entry: Entry): void {
    if (entry.dirtySince === 0) entry.dirtySince = this.now()
    const meta = entry.state.meta
    const sinceCheckpoint = meta.lastSeq - (meta.checkpoints.at(-1)?.seq ?? 0)
    const { everyRecords, everyBytes } = entry.policy
    if ((everyRecords > 0 && sinceCheckpoint >= everyRecords) || (everyBytes > 0 && meta.logBytes >= everyBytes)) {
      this.queueCheckpoint(entry)
    }
  }

  private queueCheckpoint(entry: Entry): Promise<number> {
    entry.checkpointQueued = true
    const promise = this.committer.enqueue(this.checkpointUnit(entry))
    promise.then(() => { entry.checkpointQueued = false }, (error) => {
      entry.checkpointQueued = false
      this.events.emit('error', { name: entry.name, error })
    })
    return promise
  }

  private checkpointUnit(entry: Entry): Unit<number> {
    const { state } = entry
    return {
      sync: entry.durability.mode === 'sync', states: [state],
      build: (b) => {
        const meta = b.meta(state)
        const newest = meta.checkpoints.at(-1)?.seq ?? 0
        if (meta.lastSeq === 0 || meta.lastSeq === newest) return newest
        const bytes = encodeCheckpoint({
          name: meta.name, type: meta.type, seq: meta.lastSeq, hash: meta.lastHash, schema: meta.schema,
          hlc: this.clock.latest, snapshot: entry.replica.snapshot(),
        })
        b.put(checkpointKey(meta.name, meta.lastSeq), bytes)
        const all = [...meta.checkpoints, { seq: meta.lastSeq, size: bytes.length }]
        const keep = entry.retention === 'full' ? FULL_RETENTION_CHECKPOINTS : Math.max(1, entry.retention.checkpoints)
        const kept = all.slice(-keep)
        for (const cp of all.slice(0, all.length - kept.length)) b.del(checkpointKey(meta.name, cp.seq))
        let firstSeq = meta.firstSeq
        if (entry.retention !== 'full' && kept.length >= keep) {
          const trimTo = kept[0].seq
          for (let seq = meta.firstSeq; seq <= trimTo; seq++) b.del(logKey(meta.name, seq))
          firstSeq = Math.max(firstSeq, trimTo + 1)
        }
        b.setMeta(state, { ...meta, checkpoints: kept, firstSeq, logBytes: 0 })
        const seq = meta.lastSeq
        b.onCommit(() => {
          entry.dirtySince = 0
          this.events.emit('checkpoint', { name: meta.name, seq, size: bytes.length })
        })
        return seq
      },
    }
  }

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
   * a crash, either every record is there or none. Every delta is validated
   * (on a scratch replica) before any is applied.
   */
  async commit(deltas: ReadonlyArray<{ name: string; delta: Uint8Array; type?: ReplicaType }>, options: { origin?: unknown; agent?: string } & SignalOptions = {}): Promise<ApplyResult[]> {
    this.checkOpen()
    throwIfAborted(options.signal)
    const entries: Entry[] = []
    for (const item of deltas) {
      if (!(item.delta instanceof Uint8Array)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a delta must be a Uint8Array')
      entries.push(await this.entry(item.name, item.type, { signal: options.signal }))
    }
    if (deltas.length > 1) {
      // Validate all before applying any, so a bad delta cannot leave a partial change.
      for (const [i, item] of deltas.entries()) this.newReplica(entries[i].state.meta.type).applyDelta(item.delta)
    }
    const agent = options.agent ?? this.replicaId
    const items: CaptureItem[] = []
    const changed: boolean[] = []
    const previous = this.capture
    this.capture = items
    try {
      for (const [i, item] of deltas.entries()) {
        const before = items.length
        const applied = entries[i].replica.applyDelta(item.delta, options.origin)
        changed.push(applied || items.length > before)
      }
    } finally {
      this.capture = previous
    }
    const stamped = items.map((item) => ({ ...item, agent }))
    const records = stamped.length > 0 ? await this.enqueueItems(stamped, options.origin) : []
    return entries.map((entry, i) => {
      const last = records.filter((r) => r.name === entry.name).at(-1)
      return { changed: changed[i], seq: last?.seq ?? entry.state.meta.lastSeq }
    })
  }

  /**
   * Runs `fn` (synchronous local mutations of opened replicas) and logs all
   * the changes it made as one atomic unit; resolves once durable.
   */
  async atomic(fn: () => void, options: SignalOptions = {}): Promise<ReadonlyArray<{ name: string; seq: number }>> {
    this.checkOpen()
    throwIfAborted(options.signal)
    const items: CaptureItem[] = []
    const previous = this.capture
    this.capture = items
    try {
      fn()
    } finally {
      this.capture = previous
    }
    if (items.length === 0) return []
    const records = await this.enqueueItems(items)
    return records.map((r) => ({ name: r.name, seq: r.seq }))
  }

  /** Resolves once every change so far is written and fsynced (whatever the mode). */
  async flush(options: SignalOptions = {}): Promise<void> {
    this.checkOpen()
    throwIfAborted(options.signal)
    await this.committer.flush()
  }

  /** Highest seq of `name` on stable storage (0 if none or not hydrated). */
  persistedSeq(name: string): number {
    return this.liveEntry(name)?.state.durableSeq ?? 0
  }

  /** Highest seq of `name` written (maybe not yet fsynced in async mode). */
  committedSeq(name: string): number {
    return this.liveEntry(name)?.state.meta.lastSeq ?? 0
  }

  /** Writes a checkpoint of `name` now; resolves with its seq. */
  async checkpoint(name: string, options: SignalOptions = {}): Promise<number> {
    this.checkOpen()
    const entry = await this.entry(name, undefined, { mustExist: true, signal: options.signal })
    return this.committer.enqueue(this.checkpointUnit(entry))
  }

  // ---------------------------------------------------------------- reading history

  private async metaOf(name: string, signal?: AbortSignal): Promise<NameMeta> {
    const live = this.liveEntry(name)
    if (live) return live.state.meta
    const meta = await this.readMeta(name, signal)
    if (!meta) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist${await this.storage.get(archiveKey(name)) ? ' (it is archived: open it first)' : ''}`)
    return meta
  }

  /** Records of `name`, oldest first from `from` (default: the first retained), at most `limit` (default 100). */
  async history(name: string, options: { from?: number; limit?: number; reverse?: boolean } & SignalOptions = {}): Promise<HistoryEntry[]> {
    this.checkOpen()
    const meta = await this.metaOf(name, options.signal)
    const limit = options.limit ?? 100
    const range = options.reverse
      ? { prefix: logPrefix(name), lte: logKey(name, Math.min(options.from ?? meta.lastSeq, meta.lastSeq)), reverse: true, limit, signal: options.signal }
      : { prefix: logPrefix(name), gte: logKey(name, Math.max(options.from ?? meta.firstSeq, 0)), lte: logKey(name, meta.lastSeq), limit, signal: options.signal }
    const out: HistoryEntry[] = []
    for await (const entry of this.storage.iterate(range)) {
      const record = decodeRecord(entry.value)
      if (record.name !== name || record.seq !== parseSeqKey(entry.key[2])) {
        throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": record under ${entry.key[2]} is misplaced`)
      }
      out.push(toHistoryEntry({ ...record }))
    }
    return out
  }

  /**
   * The replica as it was right after record `seq` (0 = empty), rebuilt from
   * the nearest checkpoint at or before it. A detached copy: changing it
   * changes nothing stored.
   */
  async at(name: string, seq: number, options: SignalOptions = {}): Promise<Replica> {
    this.checkOpen()
    const meta = await this.metaOf(name, options.signal)
    if (!Number.isSafeInteger(seq) || seq < 0 || seq > meta.lastSeq) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${name}": seq ${seq} is outside 0..${meta.lastSeq}`)
    }
    if (seq === 0) return this.createReplica(meta.type, { replicaId: this.replicaId })
    const rebuilt = await rebuild({
      storage: this.storage, meta, target: seq, allowTornTail: false, signal: options.signal,
      create: (snapshot) => this.createReplica(meta.type, { replicaId: this.replicaId, snapshot }),
    })
    return rebuilt.replica
  }

  /**
   * Makes a new local change of `name` that brings its value back to what it
   * was at `seq`; it is logged and replicates like any change. Resolves with
   * the seq of the new record, or null when the value already equals it.
   */
  async revert(name: string, seq: number, options: SignalOptions = {}): Promise<number | null> {
    this.checkOpen()
    const entry = await this.entry(name, undefined, { mustExist: true, signal: options.signal })
    const past = await this.at(name, seq, options)
    let delta: Uint8Array | null = null
    const records = await this.atomic(() => { delta = entry.replica.restore(past) }, options)
    return delta === null ? null : records.filter((r) => r.name === name).at(-1)?.seq ?? null
  }

  /**
   * The records of `name` from `since` (default: the first retained), then
   * live as new ones commit. Ends when `signal` aborts or the store closes.
   */
  async *changes(name: string, options: { since?: number } & SignalOptions = {}): AsyncGenerator<HistoryEntry> {
    this.checkOpen()
    const signal = options.signal
    const meta = await this.metaOf(name, signal)
    let next = options.since ?? meta.firstSeq
    if (next < meta.firstSeq) {
      throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}": records before ${meta.firstSeq} were trimmed by retention`)
    }
    const buffer: HistoryEntry[] = []
    let wake: (() => void) | undefined
    const off = this.events.on('commit', (record) => {
      if (record.name !== name) return
      buffer.push(record)
      wake?.()
    })
    const onAbort = (): void => wake?.()
    signal?.addEventListener('abort', onAbort)
    this.waiters.add(onAbort)
    try {
      while (!signal?.aborted && !this.isClosed) {
        // Catch up from storage, then serve live records; a gap means we must read again.
        const page = await this.history(name, { from: next, limit: PAGE, signal }).catch((error) => {
          if (isConcordError(error, ErrorCodes.CLOSED) || isConcordError(error, ErrorCodes.ABORTED)) return undefined
          throw error
        })
        if (!page) return
        for (const record of page) {
          if (record.seq < next) continue
          yield record
          next = record.seq + 1
        }
        if (page.length === PAGE) continue
        let gap = false
        while (!gap && !signal?.aborted && !this.isClosed) {
          while (buffer.length > 0) {
            const record = buffer.shift()!
            if (record.seq < next) continue
            if (record.seq > next) {
              gap = true
              buffer.length = 0
              break
            }
            yield record
            next = record.seq + 1
          }
          if (gap || signal?.aborted || this.isClosed) break
          await new Promise<void>((resolve) => { wake = resolve })
          wake = undefined
        }
      }
    } finally {
      off()
      signal?.removeEventListener('abort', onAbort)
      this.waiters.delete(onAbort)
    }
  }

  /**
   * Checks `name`: every retained record's checksum, seq and hash chain, every
   * checkpoint against its record, and that replaying the log from the start
   * (where retained, else from the oldest checkpoint) gives each checkpoint's
   * state and the live state.
   */
  async verify(name: string, options: SignalOptions = {}): Promise<VerifyReport> {
    this.checkOpen()
    await this.committer.idle()
    const meta = await this.metaOf(name, options.signal)
    const problems: string[] = []
    const create = (snapshot?: Uint8Array): Replica => this.createReplica(meta.type, { replicaId: this.replicaId, snapshot })
    const checkpoints = new Map<number, Replica | undefined>()
    for (const ref of meta.checkpoints) {
      const cp = await loadCheckpoint(this.storage, meta, ref.seq)
      if (!cp) {
        problems.push(`checkpoint ${ref.seq} is missing or damaged`)
        continue
      }
      try {
        checkpoints.set(ref.seq, create(cp.snapshot))
      } catch (error) {
        problems.push(`checkpoint ${ref.seq} does not load: ${(error as Error).message}`)
      }
    }
    let replica: Replica
    let seq: number
    let hash: Uint8Array
    if (meta.firstSeq <= 1) {
      replica = create()
      seq = 0
      hash = ZERO_HASH
    } else {
      const anchor = meta.checkpoints.find((cp) => cp.seq === meta.firstSeq - 1)
      const cp = anchor && await loadCheckpoint(this.storage, meta, anchor.seq)
      if (!cp) {
        problems.push(`no checkpoint at seq ${meta.firstSeq - 1} to anchor the retained log`)
        return { name, ok: false, firstSeq: meta.firstSeq, lastSeq: meta.lastSeq, records: 0, checkpoints: meta.checkpoints.length, problems }
      }
      replica = create(cp.snapshot)
      seq = cp.seq
      hash = cp.hash
    }
    let records = 0
    for await (const entry of this.storage.iterate({ prefix: logPrefix(name), gte: logKey(name, meta.firstSeq), lte: logKey(name, meta.lastSeq), signal: options.signal })) {
      const keySeq = parseSeqKey(entry.key[2])
      if (keySeq !== seq + 1) {
        problems.push(`record ${seq + 1} is missing`)
        break
      }
      try {
        const record = decodeRecord(entry.value)
        if (record.name !== name || record.seq !== keySeq) throw new Error('misplaced record')
        if (!bytesEqual(record.prevHash, hash)) throw new Error('the hash chain is broken')
        replica.applyDelta(record.payload)
        seq = keySeq
        hash = record.hash
        records++
      } catch (error) {
        problems.push(`record ${keySeq}: ${(error as Error).message}`)
        break
      }
      const cpReplica = checkpoints.get(seq)
      if (checkpoints.has(seq) && cpReplica && !sameState(replica, cpReplica)) problems.push(`replaying to seq ${seq} differs from its checkpoint`)
    }
    if (problems.length === 0 && seq !== meta.lastSeq) problems.push(`the log ends at ${seq}, the metadata says ${meta.lastSeq}`)
    if (problems.length === 0 && !bytesEqual(hash, meta.lastHash)) problems.push('the newest record hash differs from the metadata')
    const live = this.liveEntry(name)
    if (problems.length === 0 && live && live.state.pending === 0 && !sameState(replica, live.replica)) {
      problems.push('replaying the log differs from the live state')
    }
    return { name, ok: problems.length === 0, firstSeq: meta.firstSeq, lastSeq: meta.lastSeq, records, checkpoints: meta.checkpoints.length, problems }
  }

  /** Every stored name (archived ones included), in name order. */
  async names(options: SignalOptions = {}): Promise<NameInfo[]> {
    this.checkOpen()
    await this.committer.idle()
    const out: NameInfo[] = []
    for await (const entry of this.storage.iterate({ prefix: META_PREFIX, signal: options.signal })) {
      let meta: NameMeta
      try {
        meta = decodeMeta(entry.value)
      } catch {
        continue
      }
      out.push({
        name: meta.name, type: meta.type, records: meta.lastSeq - meta.firstSeq + 1, lastSeq: meta.lastSeq,
        size: meta.logBytes + (meta.checkpoints.at(-1)?.size ?? 0), lastChange: meta.touched,
        checkpoints: meta.checkpoints.length, schema: meta.schema, archived: false,
      })
    }
    for await (const entry of this.storage.iterate({ prefix: ARCHIVE_PREFIX, signal: options.signal })) {
      let marker: ArchiveMarker
      try {
        marker = decodeArchiveMarker(entry.value)
      } catch {
        continue
      }
      out.push({
        name: marker.name, type: marker.type, records: marker.records, lastSeq: marker.lastSeq, size: marker.fileSize,
        lastChange: marker.touched, checkpoints: 0, schema: marker.schema, archived: true,
      })
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  // ---------------------------------------------------------------- lifecycle

  private detach(name: string): void {
    const entry = this.liveEntry(name)
    if (!entry) return
    entry.detached = true
    entry.unsubscribe()
    this.cache.delete(name)
    this.evicted.delete(name)
  }

  private deleteOps(meta: NameMeta): StorageOperation[] {
    const ops: StorageOperation[] = [{ type: 'del', key: metaKey(meta.name) }]
    for (let seq = meta.firstSeq; seq <= meta.lastSeq; seq++) ops.push({ type: 'del', key: logKey(meta.name, seq) })
    for (const cp of meta.checkpoints) ops.push({ type: 'del', key: checkpointKey(meta.name, cp.seq) })
    return ops
  }

  /** Deletes `name` and all its data (an opened replica of it stops being persisted). */
  async delete(name: string, options: SignalOptions = {}): Promise<boolean> {
    this.checkOpen()
    await this.committer.idle()
    const meta = this.liveEntry(name)?.state.meta ?? await this.readMeta(name, options.signal)
    const marker = await this.storage.get(archiveKey(name))
    if (!meta && !marker) return false
    this.detach(name)
    const ops = meta ? this.deleteOps(meta) : []
    if (marker) ops.push({ type: 'del', key: archiveKey(name) })
    await this.committer.enqueue({ sync: true, states: [], build: (b) => { for (const op of ops) b.del(op.key) } })
    return true
  }

  private ttlOf(meta: NameMeta): number {
    return meta.ttlMs > 0 ? meta.ttlMs : this.options.ttlMs ?? 0
  }

  /**
   * Expires every name untouched (no write) for its TTL and not among the
   * recently used names kept in memory: its data is deleted, and a replica of
   * it still held by the application stops being persisted. Runs in the
   * background sweep; returns the names.
   */
  async expire(options: SignalOptions = {}): Promise<string[]> {
    this.checkOpen()
    const now = this.now()
    const expired: string[] = []
    for (const meta of await this.allMetas(options.signal)) {
      const ttl = this.ttlOf(meta)
      if (ttl <= 0 || now - meta.touched < ttl || this.cache.has(meta.name) || this.opening.has(meta.name)) continue
      this.detach(meta.name)
      const ops = this.deleteOps(meta)
      await this.committer.enqueue({ sync: true, states: [], build: (b) => { for (const op of ops) b.del(op.key) } })
      expired.push(meta.name)
      this.events.emit('expired', { name: meta.name })
    }
    return expired
  }

  private async allMetas(signal?: AbortSignal): Promise<NameMeta[]> {
    await this.committer.idle()
    const metas: NameMeta[] = []
    for await (const entry of this.storage.iterate({ prefix: META_PREFIX, signal })) {
      try {
        metas.push(decodeMeta(entry.value))
      } catch {
        // A damaged metadata value fails its name when opened; the sweep skips it.
      }
    }
    return metas
  }

  private archiveDir(): string {
    const dir = this.options.archive?.dir ?? (this.options.dir !== undefined ? `${this.options.dir}.archive` : undefined)
    if (!dir) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'archival needs `archive.dir` (or a store `dir`)')
    return dir
  }

  /**
   * Moves `name` to a compressed archive file beside the database and deletes
   * it from LevelDB; `open` brings it back transparently. A replica of it held
   * open stops being persisted (open it again after).
   */
  async archive(name: string, options: SignalOptions = {}): Promise<string> {
    this.checkOpen()
    const dir = this.archiveDir()
    const live = this.liveEntry(name)
    if (live) {
      await this.committer.enqueue(this.checkpointUnit(live))
      this.detach(name)
    }
    await this.committer.idle()
    const meta = await this.readMeta(name, options.signal)
    if (!meta) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
    const entries: Array<{ key: readonly string[]; value: Uint8Array }> = [{ key: metaKey(name), value: (await this.storage.get(metaKey(name)))! }]
    for (const prefix of [logPrefix(name), checkpointPrefix(name)]) {
      for await (const entry of this.storage.iterate({ prefix, signal: options.signal })) entries.push(entry)
    }
    const { file, marker } = await writeArchive(dir, meta, entries, this.now())
    const ops: StorageOperation[] = entries.map((entry) => ({ type: 'del', key: entry.key }))
    await this.committer.enqueue({
      sync: true, states: [],
      build: (b) => {
        for (const op of ops) b.del(op.key)
        b.put(archiveKey(name), marker)
      },
    })
    this.events.emit('archived', { name, file })
    return file
  }

  /** Archives every name untouched for `archive.afterMs` (and not among the recently used names in memory). */
  async archiveCold(options: SignalOptions = {}): Promise<string[]> {
    this.checkOpen()
    const after = this.options.archive?.afterMs ?? 0
    if (after <= 0) return []
    const now = this.now()
    const done: string[] = []
    for (const meta of await this.allMetas(options.signal)) {
      if (now - meta.touched < after || this.cache.has(meta.name) || this.opening.has(meta.name)) continue
      await this.archive(meta.name, options)
      done.push(meta.name)
    }
    return done
  }

  private async rehydrateArchive(name: string, signal?: AbortSignal): Promise<boolean> {
    const markerBytes = await this.storage.get(archiveKey(name), { signal })
    if (!markerBytes) return false
    const marker = decodeArchiveMarker(markerBytes)
    const { entries, remove } = await readArchive(this.archiveDir(), marker)
    await this.committer.enqueue({
      sync: true, states: [],
      build: (b) => {
        for (const entry of entries) b.put(entry.key, entry.value)
        b.del(archiveKey(name))
      },
    })
    await remove()
    this.events.emit('rehydrated', { name })
    return true
  }

  /**
   * Garbage collection: deletes records older than each name's retained
   * range, checkpoints no longer listed, and keys of names that no longer
   * exist (left over from an interrupted deletion).
   */
  async gc(options: SignalOptions = {}): Promise<GcReport> {
    this.checkOpen()
    await this.committer.idle()
    const metas = new Map((await this.allMetas(options.signal)).map((meta) => [meta.name, meta]))
    const archived = new Set<string>()
    for await (const key of this.storage.keys({ prefix: ARCHIVE_PREFIX, signal: options.signal })) archived.add(key[1])
    let deletedRecords = 0
    let deletedCheckpoints = 0
    const orphans = new Set<string>()
    let ops: StorageOperation[] = []
    const drain = async (): Promise<void> => {
      if (ops.length === 0) return
      const batch = ops
      ops = []
      await this.committer.enqueue({ sync: true, states: [], build: (b) => { for (const op of batch) b.del(op.key) } })
    }
    for (const kind of ['l', 'c'] as const) {
      for await (const key of this.storage.keys({ prefix: [kind], signal: options.signal })) {
        const name = key[1]
        const seq = parseSeqKey(key[2] ?? '')
        const meta = this.liveEntry(name)?.state.meta ?? metas.get(name)
        let doomed: boolean
        if (!meta) {
          doomed = !archived.has(name) && !this.opening.has(name)
          if (doomed) orphans.add(name)
        } else if (kind === 'l') {
          doomed = Number.isNaN(seq) || seq < meta.firstSeq || seq > meta.lastSeq
        } else {
          doomed = Number.isNaN(seq) || !meta.checkpoints.some((cp) => cp.seq === seq)
        }
        if (!doomed) continue
        if (kind === 'l') deletedRecords++
        else deletedCheckpoints++
        ops.push({ type: 'del', key })
        if (ops.length >= 1000) await drain()
      }
    }
    await drain()
    return { deletedRecords, deletedCheckpoints, orphanNames: orphans.size }
  }

  private scheduleSweep(ms: number): void {
    this.sweepTimer = this.timers.setTimeout(() => {
      if (this.isClosed) return
      this.sweep().catch((error) => {
        if (!this.isClosed) this.events.emit('error', { error: isConcordError(error) ? error : new ConcordError(ErrorCodes.STORAGE_ERROR, String(error)) })
      }).finally(() => {
        if (!this.isClosed) this.scheduleSweep(ms)
      })
    }, ms)
  }

  /** One background sweep: timed checkpoints, TTL expiry, archival of cold names. */
  async sweep(options: SignalOptions = {}): Promise<void> {
    this.checkOpen()
    const now = this.now()
    for (const entry of this.cache.values()) {
      const every = entry.policy.everyMs
      if (every > 0 && entry.dirtySince > 0 && now - entry.dirtySince >= every && !entry.checkpointQueued) {
        await this.queueCheckpoint(entry).catch(() => undefined)
      }
    }
    if ((this.options.ttlMs ?? 0) > 0 || (await this.anyNameTtl(options.signal))) await this.expire(options)
    if ((this.options.archive?.afterMs ?? 0) > 0) await this.archiveCold(options)
  }

  private async anyNameTtl(signal?: AbortSignal): Promise<boolean> {
    for (const meta of await this.allMetas(signal)) if (meta.ttlMs > 0) return true
    return false
  }

  // ---------------------------------------------------------------- memory

  private evictable(entry: Entry): boolean {
    return entry.state.pending === 0 && entry.state.durableSeq === entry.state.meta.lastSeq && !entry.checkpointQueued
  }

  private evictIfNeeded(): void {
    const limit = Math.max(1, this.options.cacheSize ?? 1000)
    if (this.cache.size <= limit) return
    for (const [name, entry] of this.cache) {
      if (this.cache.size <= limit) break
      if (!this.evictable(entry)) continue
      this.cache.delete(name)
      // Still reachable while the application holds the replica: keep using it then.
      this.evicted.set(name, new WeakRef(entry))
      this.cleanup.register(entry.replica, name)
    }
  }

  /** Number of names hydrated and held by the store (statistics). */
  get cachedNames(): number {
    return this.cache.size
  }

  // ---------------------------------------------------------------- closing

  private checkOpen(): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.CLOSED, 'the store is closed')
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.isClosed
  }

  /** Checkpoints (per policy), flushes, and closes the storage it opened. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.doClose()
    return this.closing
  }

  private async doClose(): Promise<void> {
    if (this.sweepTimer !== undefined) this.timers.clearTimeout(this.sweepTimer)
    await Promise.allSettled([...this.opening.values()])
    const live = new Set(this.cache.values())
    for (const ref of this.evicted.values()) {
      const entry = ref.deref()
      if (entry && !entry.detached) live.add(entry)
    }
    const checkpoints: Promise<unknown>[] = []
    for (const entry of live) {
      if (entry.policy.onClose && entry.state.meta.lastSeq > (entry.state.meta.checkpoints.at(-1)?.seq ?? 0)) {
        checkpoints.push(this.committer.enqueue(this.checkpointUnit(entry)).catch(() => undefined))
      }
    }
    await Promise.all(checkpoints)
    this.isClosed = true
    for (const wake of this.waiters) wake()
    await this.committer.close()
    for (const entry of live) {
      entry.detached = true
      entry.unsubscribe()
    }
    this.cache.clear()
    this.evicted.clear()
    if (this.ownsStorage) await this.storage.close()
  }
}

function toHistoryEntry(record: CommittedRecord): HistoryEntry {
  return {
    name: record.name, seq: record.seq, hlc: record.hlc, agent: record.agent, kind: record.kind,
    bytes: record.payload, hash: toHex(record.hash), size: record.size,
  }
}

/** Same state: equal snapshots, or equal value and version. */
function sameState(a: Replica, b: Replica): boolean {
  if (bytesEqual(a.snapshot(), b.snapshot())) return true
  return bytesEqual(a.version(), b.version()) && JSON.stringify(a.value()) === JSON.stringify(b.value())
}
