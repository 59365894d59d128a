/**
 * The owner of every name's state: the hydrated entries (bounded cache,
 * shared hydrations, leases), what is stored about each name (metadata,
 * archive markers, the index of names and types) and how it is read. Every
 * other module of the store asks it; none reads a name's metadata itself.
 * The index of names, types and digests is names/name-index.ts; how the
 * metadata and markers are read from storage, names/stored-meta.ts.
 *
 * Reading metadata is one method per cardinality: {@link Names.meta} for a
 * name, {@link Names.metas} for all. Both give the current metadata (a
 * hydrated name's live one; else the stored one brought up to the end of
 * its log, FORMAT.md "Name metadata") or, with `written`, the metadata as
 * stored.
 */
import { ConcordError, ErrorCodes, TypeMismatchError } from '../../crdt/errors.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import type { Unsubscribe } from '../../crdt/emitter.ts'
import type { StoreContext } from '../context.ts'
import type { ArchiveMarker } from '../format/archive.ts'
import { currentDigest, type NameMeta } from '../format/name-meta.ts'
import type { NameOptions } from '../options.ts'
import type { SignalOptions } from '../storage/storage.ts'
import { NameCache } from './cache.ts'
import type { NameEntry } from './entry.ts'
import { loadEntry, newEntry, storeCreated, storeCreatedMany, type NameHooks } from './hydration.ts'
import { NameIndex } from './name-index.ts'
import { ReadAhead, type NameReader } from './read-ahead.ts'
import { decodeStored, storedMarker, storedMarkers, storedMeta, storedMetas, type MetaOptions, type NameRange } from './stored-meta.ts'

export type { NameHooks } from './hydration.ts'
export type { MetaOptions, NameRange } from './stored-meta.ts'

/** Names hydrated and kept in memory for a reader until {@link release} (see {@link Names.lease}). */
export interface NameLease {
  /** The replicas held, by name. */
  readonly replicas: ReadonlyMap<string, Replica>
  /** The names that could not be read, with why (`CONCORD_NOT_FOUND`, `CONCORD_CORRUPT_RECORD`, ...). */
  readonly failed: ReadonlyMap<string, unknown>
  /** Lets the names go (the cache may evict them again); idempotent. */
  release(): void
}

/** @internal the owner of the names of a store. */
export class Names {
  private readonly cache: NameCache
  /** Hydrations in flight, by name (one per name). */
  private readonly opening = new Map<string, Promise<NameEntry>>()
  /** The index of stored names, their types and digests (names/name-index.ts). */
  private readonly index: NameIndex
  /** Listeners of {@link watch}. */
  private readonly watchers = new Set<(name: string) => void>()
  /** Stored names hydrated (read from storage into memory) since the store opened. */
  private hydrationCount = 0
  /** Serves names hydrated one after another in name order from range scans. */
  private readonly readAhead: ReadAhead
  /** Names the cache keeps (`cacheSize`). */
  private readonly cacheLimit: number

  constructor(
    private readonly context: StoreContext,
    private readonly hooks: NameHooks,
  ) {
    this.readAhead = new ReadAhead(context.storage)
    context.committer.observeWrites(this.readAhead)
    this.cacheLimit = Math.max(1, context.options.cacheSize ?? 1000)
    this.cache = new NameCache(
      this.cacheLimit,
      (entries) => this.catchUp(entries),
      (entry) => {
        // Evicted once durable and idle: the replica is the stored state (whose digest the metadata may hold).
        if (!entry.state.unborn) this.index.noteStored(entry.name, entry.type, currentDigest(entry.state.meta) ?? digestOrUndefined(entry))
        this.noteChanged(entry.name)
      },
    )
    this.index = new NameIndex(context, this.cache)
    context.committer.events.on('durable', ({ names }) => {
      for (const { name } of names) this.refreshEvicted(name)
      this.cache.evictIfNeeded()
    })
  }

  /**
   * Calls `listener` with a name whenever it leaves memory (its digest and
   * listing are then those {@link digestOf} and {@link listedType} answer
   * until it is hydrated again) or stops being stored (deleted, expired,
   * archived). With the names held in memory ({@link held}), that covers
   * every change to what {@link list} and {@link digestOf} answer.
   */
  watch(listener: (name: string) => void): Unsubscribe {
    this.watchers.add(listener)
    return () => {
      this.watchers.delete(listener)
    }
  }

  private noteChanged(name: string): void {
    for (const listener of this.watchers) listener(name)
  }

  /**
   * The type of `name` if {@link list} lists it now (a stored name, or one
   * in memory and stored), else undefined; known without reading storage
   * once the index is loaded.
   */
  listedType(name: string): ReplicaType | undefined {
    const live = this.cache.live(name)
    // As list() answers: a name only opened in memory is not listed, one whose first write is under way is.
    if (live && (!live.state.unborn || live.state.pending > 0)) return live.type
    return this.index.types?.get(name)
  }

  /**
   * A name evicted but still reachable (the application holds its replica)
   * whose change became durable: what {@link digestOf} answers once it is
   * collected is its digest now, not the one noted when it was evicted
   * (which would be an older state's: a reconciliation would take the name
   * for unchanged by a peer holding that state).
   */
  private refreshEvicted(name: string): void {
    if (this.cache.busy(name)) return
    const entry = this.cache.live(name)
    if (!entry || entry.state.unborn) return
    // The metadata's digest when current; else unknown (not computed here: a reader that needs it holds the name).
    this.index.noteStored(name, entry.type, currentDigest(entry.state.meta))
    this.noteChanged(name)
  }

  // ------------------------------------------------------------ hydrated entries

  /** The entry of `name` if hydrated (without touching the LRU order). */
  live(name: string): NameEntry | undefined {
    return this.cache.live(name)
  }

  /** The entry of `name` if hydrated, marked recently used; `TypeMismatchError` if `type` differs. */
  use(name: string, type?: ReplicaType): NameEntry | undefined {
    const entry = this.cache.use(name)
    if (entry && type !== undefined && entry.type !== type) throw new TypeMismatchError(name, type, entry.type)
    return entry
  }

  /**
   * The entry of `name`, hydrating it if needed (an archived name is
   * brought back first); `TypeMismatchError` if `type` differs. Concurrent
   * calls share one hydration. A name it creates is stored at once, or with
   * `deferCreation` by the first batch that writes it.
   */
  async entry(name: string, type: ReplicaType | undefined, options: NameOptions = {}, deferCreation = false): Promise<NameEntry> {
    let entry = this.use(name, type)
    if (entry) return entry
    let pending = this.opening.get(name)
    if (!pending) {
      pending = this.hydrate(name, type, options, deferCreation).finally(() => this.opening.delete(name))
      this.opening.set(name, pending)
    }
    entry = await pending
    if (type !== undefined && entry.type !== type) throw new TypeMismatchError(name, type, entry.type)
    return entry
  }

  /**
   * The entries of `names` as {@link entry} gives each, a name it creates
   * being stored by the first batch that writes it (`openMany`). A name
   * known to be absent (see {@link NameIndex.knownAbsent}) is made at once, without a
   * hydration of its own. Resolves once every one is there; rejects as the
   * first that fails (the others are opened all the same).
   */
  entries(names: ReadonlyArray<{ readonly name: string; readonly type: ReplicaType }>, options: NameOptions = {}): Promise<NameEntry[]> {
    const out: Array<NameEntry | Promise<NameEntry>> = []
    for (const { name, type } of names) {
      try {
        out.push(this.useOrCreateAbsent(name, type, options) ?? this.entry(name, type, options, true))
      } catch (error) {
        out.push(Promise.reject(error))
      }
    }
    return Promise.all(out)
  }

  /**
   * The entry of `name` if hydrated (as {@link use}), or a new one made at
   * once when the name is known to be absent and nothing hydrates it
   * (stored by the first batch that writes it); else undefined: the caller
   * hydrates it with {@link entry}.
   */
  useOrCreateAbsent(name: string, type: ReplicaType, options: NameOptions = {}): NameEntry | undefined {
    return this.use(name, type) ?? this.createAbsent(name, type, options)
  }

  /** A new entry of `name`, made at once when the name is known to be absent and nothing hydrates it; else undefined. */
  private createAbsent(name: string, type: ReplicaType, options: NameOptions): NameEntry | undefined {
    if (options.mustExist || this.opening.has(name) || !this.index.knownAbsent(name)) return undefined
    const entry = newEntry(this.context, name, type, options)
    this.hooks.attach(entry)
    this.cache.add(entry)
    return entry
  }

  private async hydrate(name: string, type: ReplicaType | undefined, options: NameOptions, deferCreation: boolean): Promise<NameEntry> {
    // A name the index knows is absent (a new one) is created without reading its metadata and archive marker.
    const absent = this.index.knownAbsent(name)
    if (!absent) this.readAhead.hydrating(name)
    let written = absent ? undefined : decodeStored(name, await this.readAhead.meta(name, { signal: options.signal }))
    if (!written && !absent && (await this.hooks.rehydrate(name, options.signal))) written = await this.meta(name, { signal: options.signal, written: true })
    // A new name reads nothing: no read-ahead reader for it.
    const reader = written ? this.readAhead.reader(name) : this.context.storage
    const entry = await loadEntry(this.context, this.hooks, name, written, type, options, deferCreation, reader)
    if (written) {
      this.hydrationCount++
      this.index.types?.set(name, entry.type)
    }
    this.cache.add(entry)
    return entry
  }

  /** Stores a name `entry` created in memory (its metadata alone) unless a batch stored it already. */
  store(entry: NameEntry): Promise<void> {
    return storeCreated(this.context, entry)
  }

  /** Stores the names of `entries` created in memory and not stored yet, in one batch. */
  storeMany(entries: readonly NameEntry[]): Promise<void> {
    return storeCreatedMany(this.context, entries)
  }

  /**
   * Drops entries a refused commit created in memory and never stored (so
   * that no name is left behind by a refusal); a stored one is kept.
   */
  forgetUnstored(entries: Iterable<NameEntry>): void {
    for (const entry of entries) {
      if (entry.state.unborn && entry.state.pending === 0 && entry.state.meta.lastSeq === 0) {
        this.cache.detach(entry.name)
        this.noteChanged(entry.name)
      }
    }
  }

  /** The store stops persisting the replica of `name` (it is being archived): its entry is detached; the name stays listed. */
  detach(name: string): void {
    this.cache.detach(name)
  }

  /** The store stops persisting `name` (expired, archived, deleted): its entry is detached and the name unlisted. */
  remove(name: string): void {
    this.cache.detach(name)
    this.index.remove(name)
    this.noteChanged(name)
  }

  /** `name` was archived (after {@link remove}): it has a marker now. */
  noteArchived(name: string): void {
    this.index.noteArchived(name)
  }

  /** `name` was brought back from its archive: its marker is gone. */
  noteRehydrated(name: string): void {
    this.index.noteRehydrated(name)
  }

  /** On open: an empty store's index is known at once ({@link NameIndex.primeIfEmpty}). */
  primeIfEmpty(): Promise<void> {
    return this.index.primeIfEmpty()
  }

  /** True when `name` is held (recently used) or being hydrated. */
  busy(name: string): boolean {
    return this.cache.busy(name) || this.opening.has(name)
  }

  /** True while `name` is being hydrated. */
  hydrating(name: string): boolean {
    return this.opening.has(name)
  }

  /** The held entries, least recently used first. */
  held(): IterableIterator<NameEntry> {
    return this.cache.held()
  }

  /** Every live entry (held, or evicted but still reachable). */
  allLive(): Set<NameEntry> {
    return this.cache.allLive()
  }

  /**
   * Stored names brought into the cache since the store opened: read from
   * storage, or taken back after eviction while still reachable; new names
   * are not counted.
   */
  get hydrations(): number {
    return this.hydrationCount + this.cache.revived
  }

  /** Number of names held in memory. */
  get size(): number {
    return this.cache.size
  }

  /** Whether more names are held than the cache keeps (names pinned by writes under way, readers, the application). */
  get overfull(): boolean {
    return this.cache.size > this.cacheLimit
  }

  /** Evicts the least recently used names beyond the cache size that may go. */
  evictIfNeeded(): void {
    this.cache.evictIfNeeded()
  }

  /** Resolves once no hydration is under way (on close). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.opening.values()])
  }

  /** Forgets every entry (on close: each is detached). */
  clear(): void {
    // First: it stops the index load a preload started.
    this.index.clear()
    for (const entry of this.cache.allLive()) entry.detach()
    this.cache.clear()
    this.readAhead.clear()
  }

  /**
   * Hydrates `names` (that exist) and keeps them in memory until the lease
   * is released, whatever the cache size: what a reader that needs their
   * replicas at one instant holds (a sync answer). Names that cannot be
   * read are reported in `failed`, not thrown.
   */
  async lease(names: readonly string[], options: SignalOptions = {}): Promise<NameLease> {
    const held = new Map<string, NameEntry>()
    const failed = new Map<string, unknown>()
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      for (const entry of held.values()) entry.unpin()
      this.cache.evictIfNeeded()
    }
    try {
      for (const name of names) {
        if (held.has(name)) continue
        let entry: NameEntry
        try {
          entry = await this.entry(name, undefined, { mustExist: true, signal: options.signal })
        } catch (error) {
          if (isConcordAbort(error)) throw error
          failed.set(name, error)
          continue
        }
        entry.pin()
        held.set(name, entry)
      }
    } catch (error) {
      release()
      throw error
    }
    const replicas = new Map([...held].map(([name, entry]) => [name, entry.replica]))
    return { replicas, failed, release }
  }

  /** Queues one metadata write of the names whose stored metadata lags their log (one unit for all), so that they can leave memory. */
  private catchUp(entries: readonly NameEntry[]): void {
    // Not synced on its own: until it is, each name's tail marker covers a crash.
    const states = entries.map((entry) => entry.state)
    this.context.committer
      .enqueue({
        sync: false,
        states,
        build: (b) => {
          for (const state of states) b.setMeta(state, b.meta(state))
          // Written: the name can leave memory now, not at the next activity.
          b.onCommit(() => this.cache.evictIfNeeded())
        },
      })
      .catch(() => undefined)
  }

  // ------------------------------------------------------------ what is stored

  /** The type of a stored name, or undefined if it does not exist (archived names included). */
  async typeOf(name: string, options: SignalOptions = {}): Promise<ReplicaType | undefined> {
    const live = this.cache.live(name)
    if (live) return live.type
    const meta = await this.meta(name, { signal: options.signal, written: true })
    if (meta) return meta.type
    return (await this.marker(name, options))?.type
  }

  /**
   * The type of `name` as far as this store knows without reading storage:
   * a hydrated name's, or one listed by {@link list} (and kept up to date
   * since); undefined otherwise (it may still be stored).
   */
  knownType(name: string): ReplicaType | undefined {
    return this.cache.live(name)?.type ?? this.index.types?.get(name)
  }

  /**
   * The version of `name` read without hydrating it, where the store holds
   * it: today a hydrated name's. The seam for versions kept in the
   * metadata (issue 15): then every stored name has one.
   */
  versionOf(name: string): Uint8Array | undefined {
    return this.cache.live(name)?.replica.version()
  }

  /**
   * The state digest of `name` (crdt/state-digest.ts) without hydrating it:
   * a hydrated name's, computed from its replica; else the one its stored
   * metadata holds for its last record, once {@link list} loaded the index.
   * Undefined when unknown (an older folder's name not hydrated since, one
   * whose metadata lags its log): the reader hydrates it to know.
   */
  digestOf(name: string): Uint8Array | undefined {
    const live = this.cache.live(name)
    if (live) return digestOrUndefined(live)
    return this.index.digests.get(name)
  }

  /** {@link digestOf} where it costs no digest computation (a name in memory whose digest was computed since it changed, or one not in memory), else undefined. */
  knownDigestOf(name: string): Uint8Array | undefined {
    const live = this.cache.live(name)
    if (live) return live.computedDigest()
    return this.index.digests.get(name)
  }

  /** Every stored name that is not archived, with its type ({@link NameIndex.list}). */
  list(options: SignalOptions = {}): Promise<Array<{ readonly name: string; readonly type: ReplicaType }>> {
    return this.index.list(options)
  }

  /** Starts loading the index in the background ({@link NameIndex.preload}). */
  preload(): void {
    this.index.preload()
  }

  /**
   * The metadata of `name` (see the module comment), or undefined if it is
   * not stored. With `mustExist`, `CONCORD_NOT_FOUND` instead (saying when
   * the name is archived).
   */
  meta(name: string, options: MetaOptions & { readonly mustExist: true }): Promise<NameMeta>
  meta(name: string, options?: MetaOptions & { readonly mustExist?: boolean }): Promise<NameMeta | undefined>
  meta(name: string, options: MetaOptions & { readonly mustExist?: boolean } = {}): Promise<NameMeta | undefined> {
    const live = options.written || options.stored ? undefined : this.cache.live(name)
    if (live) return Promise.resolve(live.state.meta)
    return storedMeta(this.context, name, options)
  }

  /**
   * The metadata of `name` as stored and a reader of its checkpoints and
   * log, through the read-ahead that hydration uses (names read in key
   * order are served from one scan per kind), for a reader that rebuilds
   * the name without hydrating it (names/stored-state.ts); undefined when
   * it is not stored. The metadata may lag the log: rebuild to its end.
   */
  async stored(name: string, options: SignalOptions = {}): Promise<{ readonly meta: NameMeta; readonly reader: NameReader } | undefined> {
    this.readAhead.hydrating(name)
    const meta = decodeStored(name, await this.readAhead.meta(name, options))
    return meta && { meta, reader: this.readAhead.reader(name) }
  }

  /**
   * The metadata of every stored name that is not archived (see the module
   * comment; damaged ones skipped), in name order, once the pipeline is
   * idle. `where` picks names by their metadata as written before anything
   * else is read for them (a name's `touched` only grows, its type never
   * changes).
   */
  metas(options: MetaOptions & NameRange & { readonly where?: (written: NameMeta) => boolean } = {}): AsyncGenerator<NameMeta> {
    return storedMetas(this.context, this.cache, options)
  }

  /** The archive marker of `name`, or undefined when it is not archived. */
  marker(name: string, options: SignalOptions = {}): Promise<ArchiveMarker | undefined> {
    return storedMarker(this.context, name, options)
  }

  /** Every archive marker (damaged ones skipped), in name order. */
  markers(options: SignalOptions & NameRange = {}): AsyncGenerator<ArchiveMarker> {
    return storedMarkers(this.context, options)
  }
}

/** The digest of a hydrated entry's replica, or undefined when the replica cannot give one. */
function digestOrUndefined(entry: NameEntry): Uint8Array | undefined {
  try {
    return entry.digest()
  } catch {
    return undefined
  }
}

/** An abort of the caller (not a name's failure). */
function isConcordAbort(error: unknown): boolean {
  return error instanceof ConcordError && (error.code === ErrorCodes.ABORTED || error.code === ErrorCodes.CLOSED)
}
