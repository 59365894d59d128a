/**
 * The shared state of a store: storage, commit pipeline, name cache, events,
 * clock and options, with the small read helpers every store module needs.
 * The store's modules (hydration, writes, time travel, archival, lifecycle)
 * each take one `StoreCore`; `Store` (store.ts) is the facade over them.
 */
import { Emitter } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { trustedLimits } from '../crdt/documents/options.ts'
import { WaitingBudget } from '../crdt/documents/waiting-room.ts'
import { HybridClock } from '../crdt/hlc.ts'
import type { Replica, ReplicaId, ReplicaType } from '../crdt/replica.ts'
import { Committer, realTimers, type Timers } from './committer.ts'
import { archiveKey, logKey, logPrefix, META_PREFIX, metaKey, parseSeqKey, TAIL_PREFIX } from './format/keys.ts'
import { decodeMeta, type NameMeta } from './format/name-meta.ts'
import { NameCache } from './name-cache.ts'
import type { ReplicaCreator, StoreOptions } from './options.ts'
import { decodeRecord } from './format/record.ts'
import type { Storage } from './storage/storage.ts'
import { toHistoryEntry, type StoreEvents } from './store-types.ts'

/** @internal state shared by the store's modules. */
export class StoreCore {
  readonly events = new Emitter<StoreEvents>()
  readonly clock: HybridClock
  readonly committer: Committer
  readonly cache: NameCache
  readonly now: () => number
  readonly timers: Timers
  /** Waiting `changes()` iterators, woken on close. */
  readonly waiters = new Set<() => void>()
  /** Reports of damaged tails dropped since the store opened. */
  readonly truncations: Array<{ name: string; fromSeq: number; toSeq: number; reason: string }> = []
  isClosed = false
  private readonly emptyVersions = new Map<ReplicaType, Uint8Array>()
  private readonly mergers = new Map<ReplicaType, ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined>()

  /**
   * Creates a replica of a type for this store: with the store's document
   * limits, less the decoded-size bounds (its replicas replay the store's
   * own log; remote deltas are checked by {@link checkDelta} first).
   */
  readonly createReplica: ReplicaCreator
  /** Document updates waiting for a dependency, bounded per sender over every name. */
  readonly waitingBudget: WaitingBudget

  constructor(
    readonly storage: Storage,
    readonly replicaId: ReplicaId,
    createReplica: ReplicaCreator,
    readonly options: StoreOptions,
  ) {
    const limits = trustedLimits(options.documentLimits)
    const budget = options.waitingBudget
    this.waitingBudget = budget instanceof WaitingBudget ? budget : new WaitingBudget(budget)
    const waitingBudget = this.waitingBudget
    this.createReplica = (type, replicaOptions) => createReplica(type, { limits, waitingBudget, ...replicaOptions })
    this.now = options.now ?? Date.now
    // The clock follows the store's wall clock: the HLC of the newest record is a name's last touch (FORMAT.md).
    this.clock = options.clock ?? new HybridClock(this.now)
    this.timers = options.timers ?? realTimers
    this.cache = new NameCache(Math.max(1, options.cacheSize ?? 1000), (entry) => {
      // Not synced on its own: until it is, the name's tail marker covers a crash.
      const { state } = entry
      this.committer.enqueue({
        sync: false,
        states: [state],
        build: (b) => {
          b.setMeta(state, b.meta(state))
          // Written: the name can leave memory now, not at the next activity.
          b.onCommit(() => this.cache.evictIfNeeded())
        },
      }).catch(() => undefined)
    })
    const durability = options.durability ?? { mode: 'sync' }
    this.committer = new Committer(storage, { rpoMs: durability.mode === 'async' ? durability.rpoMs : 100, timers: this.timers })
    this.committer.events.on('commit', ({ records }) => {
      if (this.events.listenerCount('commit') === 0) return
      for (const record of records) this.events.emit('commit', toHistoryEntry(record))
    })
    this.committer.events.on('durable', ({ names }) => {
      for (const item of names) this.events.emit('durable', item)
      this.cache.evictIfNeeded()
    })
  }

  /** Throws `CONCORD_CLOSED` once the store is closed. */
  checkOpen(): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.CLOSED, 'the store is closed')
  }

  /** Checks a remote delta of `type` against the store's document limits (throws `CONCORD_LIMIT_EXCEEDED`, DecodeError). */
  checkDelta(type: ReplicaType, delta: Uint8Array): void {
    this.options.checkDelta?.(type, delta, this.options.documentLimits)
  }

  /**
   * Validates a remote delta of `type` without touching any state: its
   * decoded size, then a parse (Automerge, in scratch documents) or an
   * apply to a scratch replica (every other type). Throws DecodeError or
   * `CONCORD_LIMIT_EXCEEDED`.
   */
  validateDelta(type: ReplicaType, delta: Uint8Array): void {
    this.options.checkDelta?.(type, delta, this.options.documentLimits, true)
    // A scratch Automerge replica would hold (not parse) changes whose dependencies it lacks: parsed above instead.
    // (The scratch replica holds nothing against the shared budget of waiting updates.)
    if (type !== 'automerge') this.createReplica(type, { replicaId: this.replicaId, clock: this.clock, waitingBudget: undefined }).applyDelta(delta)
  }

  /** A replica of `type` bound to the store's id and clock. */
  newReplica(type: ReplicaType, snapshot?: Uint8Array): Replica {
    return this.createReplica(type, { replicaId: this.replicaId, clock: this.clock, snapshot })
  }

  /** A detached replica (its own clock): for `at`, `verify`. */
  detachedReplica(type: ReplicaType, snapshot?: Uint8Array): Replica {
    return this.createReplica(type, { replicaId: this.replicaId, snapshot })
  }

  /** The merge of `type`'s deltas (options.deltaMerger), or undefined when it has none. */
  mergerOf(type: ReplicaType): ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined {
    if (this.mergers.has(type)) return this.mergers.get(type)
    const merger = this.options.deltaMerger?.(type)
    this.mergers.set(type, merger)
    return merger
  }

  /** The version of an empty replica of `type`. */
  emptyVersion(type: ReplicaType): Uint8Array {
    let version = this.emptyVersions.get(type)
    if (!version) this.emptyVersions.set(type, (version = this.newReplica(type).version()))
    return version
  }

  /**
   * The stored metadata of `name` as written, or undefined. Its log tail
   * (lastSeq, lastHash, logBytes, touched) may lag the log: see {@link withTail}.
   */
  async readMeta(name: string, signal?: AbortSignal): Promise<NameMeta | undefined> {
    const bytes = await this.storage.get(metaKey(name), { signal })
    if (!bytes) return undefined
    const meta = decodeMeta(bytes)
    if (meta.name !== name) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `metadata stored under "${name}" belongs to "${meta.name}"`)
    return meta
  }

  /**
   * Stored metadata brought up to the end of the log: records appended after
   * the metadata was last written move `lastSeq`, `lastHash`, `logBytes` and
   * `touched` (the HLC wall time of the newest record). Records are not
   * checked here (hydration, `history`, `at` and `verify` do that).
   */
  async withTail(meta: NameMeta, signal?: AbortSignal): Promise<NameMeta> {
    const { name } = meta
    let lastSeq = meta.lastSeq
    let logBytes = meta.logBytes
    let newest: Uint8Array | undefined
    for await (const entry of this.storage.iterate({ prefix: logPrefix(name), gt: logKey(name, meta.lastSeq), signal })) {
      const seq = parseSeqKey(entry.key[2] ?? '')
      if (Number.isNaN(seq)) continue
      lastSeq = seq
      logBytes += entry.value.length
      newest = entry.value
    }
    if (!newest) return meta
    let lastHash = meta.lastHash
    let touched = meta.touched
    try {
      const record = decodeRecord(newest)
      lastHash = record.hash
      touched = Math.max(touched, record.hlc.wall)
    } catch {
      // A damaged newest record: hydration truncates it; readers report it.
    }
    return { ...meta, lastSeq, lastHash, logBytes, touched }
  }

  /** Names whose log runs past their stored metadata (they have a tail marker). */
  async tailNames(signal?: AbortSignal): Promise<Set<string>> {
    const names = new Set<string>()
    for await (const key of this.storage.keys({ prefix: TAIL_PREFIX, signal })) names.add(key[1])
    return names
  }

  /**
   * The current metadata of a stored name from its stored metadata: the live
   * one if hydrated, else brought up to the log when `tails` (from
   * {@link tailNames}) marks it.
   */
  async current(stored: NameMeta, tails: ReadonlySet<string>, signal?: AbortSignal): Promise<NameMeta> {
    const live = this.cache.live(stored.name)
    if (live) return live.state.meta
    return tails.has(stored.name) ? this.withTail(stored, signal) : stored
  }

  /** The stored metadata of `name` brought up to the end of its log, or undefined. */
  async storedMeta(name: string, signal?: AbortSignal): Promise<NameMeta | undefined> {
    const meta = await this.readMeta(name, signal)
    return meta && this.withTail(meta, signal)
  }

  /** The current metadata of a name (live, or stored + log tail), or undefined. */
  async currentMeta(name: string, signal?: AbortSignal): Promise<NameMeta | undefined> {
    return this.cache.live(name)?.state.meta ?? this.storedMeta(name, signal)
  }

  /** The metadata of an existing name (live or stored); `CONCORD_NOT_FOUND` otherwise. */
  async metaOf(name: string, signal?: AbortSignal): Promise<NameMeta> {
    const live = this.cache.live(name)
    if (live) return live.state.meta
    const meta = await this.storedMeta(name, signal)
    if (!meta) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist${await this.storage.get(archiveKey(name)) ? ' (it is archived: open it first)' : ''}`)
    return meta
  }

  /**
   * The metadata of every stored name as written (damaged ones skipped),
   * once the pipeline is idle. The log tails may lag: use {@link withTail}
   * where they matter.
   */
  async allMetas(signal?: AbortSignal): Promise<NameMeta[]> {
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
}
