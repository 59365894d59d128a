/**
 * The owner of every name's state: the hydrated entries (bounded cache,
 * shared hydrations, leases), what is stored about each name (metadata,
 * archive markers, the index of names and types) and how it is read. Every
 * other module of the store asks it; none reads a name's metadata itself.
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
import { decodeArchiveMarker, type ArchiveMarker } from '../format/archive.ts'
import { ARCHIVE_PREFIX, archiveKey, logKey, logPrefix, META_PREFIX, metaKey, parseSeqKey, TAIL_PREFIX } from '../format/keys.ts'
import { currentDigest, decodeMeta, type NameMeta } from '../format/name-meta.ts'
import { decodeRecord, recordHash } from '../format/record.ts'
import type { NameOptions } from '../options.ts'
import type { SignalOptions, StorageKey } from '../storage/storage.ts'
import { NameCache } from './cache.ts'
import { DigestTable } from './digest-table.ts'
import type { NameEntry } from './entry.ts'
import { loadEntry, newEntry, storeCreated, storeCreatedMany, type NameHooks } from './hydration.ts'
import { ReadAhead, type NameReader } from './read-ahead.ts'

export type { NameHooks } from './hydration.ts'

/** How {@link Names.meta} and {@link Names.metas} read. */
export interface MetaOptions extends SignalOptions {
  /** The metadata as stored: no live entry, no log tail after it. */
  readonly written?: boolean | undefined
  /** The metadata as stored brought up to the end of the log (its tail), without a live entry's. */
  readonly stored?: boolean | undefined
}

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
  /** Stored (not archived) names and their types, loaded by the first {@link list}, kept since. */
  private index: Map<string, ReplicaType> | undefined
  private indexing: Promise<Map<string, ReplicaType>> | undefined
  /** Names removed while the index loads (the load's scan may still hold them). */
  private readonly removedWhileIndexing = new Set<string>()
  /** State digests of stored names that are not hydrated, where known (FORMAT.md "Name metadata"); kept with the index. */
  private readonly digests = new DigestTable()
  /** Listeners of {@link watch}. */
  private readonly watchers = new Set<(name: string) => void>()
  /** Stored names hydrated (read from storage into memory) since the store opened. */
  private hydrationCount = 0
  /** Serves names hydrated one after another in name order from range scans. */
  private readonly readAhead: ReadAhead
  /**
   * Archived names (those with an archive marker), loaded with the index and
   * kept since (a superset: a stale member only costs a storage read). With
   * the index, they tell that a name is absent without reading storage.
   */
  private readonly archived = new Set<string>()
  private archivedKnown = false
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
        if (!entry.state.unborn) {
          this.index?.set(entry.name, entry.type)
          // Evicted once durable and idle: the replica is the stored state (whose digest the metadata may hold).
          const digest = currentDigest(entry.state.meta) ?? digestOrUndefined(entry)
          if (digest) this.digests.set(entry.name, digest)
          else this.digests.delete(entry.name)
        }
        this.noteChanged(entry.name)
      },
    )
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
    return this.index?.get(name)
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
    this.index?.set(name, entry.type)
    // The metadata's digest when current; else unknown (not computed here: a reader that needs it holds the name).
    const digest = currentDigest(entry.state.meta)
    if (digest) this.digests.set(name, digest)
    else this.digests.delete(name)
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
   * known to be absent (see {@link knownAbsent}) is made at once, without a
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
    if (options.mustExist || this.opening.has(name) || !this.knownAbsent(name)) return undefined
    const entry = newEntry(this.context, name, type, options)
    this.hooks.attach(entry)
    this.cache.add(entry)
    return entry
  }

  private async hydrate(name: string, type: ReplicaType | undefined, options: NameOptions, deferCreation: boolean): Promise<NameEntry> {
    // A name the index knows is absent (a new one) is created without reading its metadata and archive marker.
    const absent = this.knownAbsent(name)
    if (!absent) this.readAhead.hydrating(name)
    let written = absent ? undefined : this.decodeStored(name, await this.readAhead.meta(name, { signal: options.signal }))
    if (!written && !absent && (await this.hooks.rehydrate(name, options.signal))) written = await this.meta(name, { signal: options.signal, written: true })
    // A new name reads nothing: no read-ahead reader for it.
    const reader = written ? this.readAhead.reader(name) : this.context.storage
    const entry = await loadEntry(this.context, this.hooks, name, written, type, options, deferCreation, reader)
    if (written) {
      this.hydrationCount++
      this.index?.set(name, entry.type)
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
    this.index?.delete(name)
    this.digests.delete(name)
    this.archived.delete(name)
    if (this.indexing) this.removedWhileIndexing.add(name)
    this.noteChanged(name)
  }

  /** `name` was archived (after {@link remove}): it has a marker now. */
  noteArchived(name: string): void {
    this.archived.add(name)
  }

  /** `name` was brought back from its archive: its marker is gone. */
  noteRehydrated(name: string): void {
    this.archived.delete(name)
  }

  /**
   * Whether `name` is neither stored nor archived, known without reading
   * storage: not hydrated or being hydrated, and absent from the loaded
   * index of stored names and from the archived ones. False when unknown.
   */
  private knownAbsent(name: string): boolean {
    return this.index !== undefined && this.indexing === undefined && this.archivedKnown && !this.index.has(name) && !this.archived.has(name)
  }

  /**
   * On open: a store that holds no name and no archive marker has an empty
   * index at once (two key seeks), so new names are created without reading
   * storage from the first one; otherwise the index loads with the first
   * {@link list}.
   */
  async primeIfEmpty(): Promise<void> {
    if (this.index !== undefined || this.indexing !== undefined) return
    for (const prefix of [META_PREFIX, ARCHIVE_PREFIX]) {
      for await (const _ of this.context.storage.keys({ prefix, limit: 1 })) return
    }
    if (this.index !== undefined || this.indexing !== undefined) return
    this.index = new Map()
    this.archivedKnown = true
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
    this.preloading?.abort()
    for (const entry of this.cache.allLive()) entry.detach()
    this.cache.clear()
    this.readAhead.clear()
    this.index = undefined
    this.digests.clear()
    this.archived.clear()
    this.archivedKnown = false
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
    return this.cache.live(name)?.type ?? this.index?.get(name)
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
    return this.digests.get(name)
  }

  /** {@link digestOf} where it costs no digest computation (a name in memory whose digest was computed since it changed, or one not in memory), else undefined. */
  knownDigestOf(name: string): Uint8Array | undefined {
    const live = this.cache.live(name)
    if (live) return live.computedDigest()
    return this.digests.get(name)
  }

  /**
   * Every stored name that is not archived, with its type, in no particular
   * order; hydrates nothing. A name whose first write is under way is
   * listed: its change was applied and announced (a sync answer must cover
   * it); one only opened in memory, with nothing to write yet, is not.
   */
  async list(options: SignalOptions = {}): Promise<Array<{ readonly name: string; readonly type: ReplicaType }>> {
    const index = this.index ?? (await (this.indexing ?? this.startIndexing(options.signal)))
    // The names in memory (a few) over the index (every name), without a copy of the index: ~50 MiB at a million names.
    const live = new Map<string, ReplicaType>()
    for (const entry of this.cache.allLive()) if (!entry.state.unborn || entry.state.pending > 0) live.set(entry.name, entry.type)
    const out: Array<{ readonly name: string; readonly type: ReplicaType }> = []
    for (const [name, type] of index) {
      const held = live.get(name)
      if (held !== undefined) live.delete(name)
      out.push({ name, type: held ?? type })
    }
    for (const [name, type] of live) out.push({ name, type })
    return out
  }

  /**
   * Starts loading the index in the background, unless it is loaded or
   * loading: a peer about to sync lists its names (a first sync waited
   * ~15 us per name for it). A failure is left for the next {@link list}
   * to meet again.
   */
  preload(): void {
    if (this.index !== undefined || this.indexing !== undefined) return
    // Stopped by clear() (the store closes): the load then rejects, and nobody waits for it.
    const stop = (this.preloading = new AbortController())
    this.startIndexing(stop.signal)
      .finally(() => {
        if (this.preloading === stop) this.preloading = undefined
      })
      .catch(() => undefined)
  }

  /** Stops the index load {@link preload} started, if it runs. */
  private preloading: AbortController | undefined

  /** Loads the index (shared by every caller until it settles: {@link indexing}). */
  private startIndexing(signal: AbortSignal | undefined): Promise<Map<string, ReplicaType>> {
    const loading = this.loadIndex({ signal }).finally(() => {
      if (this.indexing === loading) this.indexing = undefined
    })
    this.indexing = loading
    return loading
  }

  private async loadIndex(options: SignalOptions): Promise<Map<string, ReplicaType>> {
    const index = new Map<string, ReplicaType>()
    this.removedWhileIndexing.clear()
    const tails = await this.tailNames(options.signal)
    for await (const meta of this.metas({ signal: options.signal, written: true })) {
      index.set(meta.name, meta.type)
      // A name with a tail marker has records after its metadata: its stored digest is stale.
      const digest = tails.has(meta.name) ? undefined : currentDigest(meta)
      if (digest && !this.cache.live(meta.name)) this.digests.set(meta.name, digest)
    }
    // Names stored meanwhile are live (list adds them) or indexed when they leave memory; those removed meanwhile go.
    for (const name of this.removedWhileIndexing) {
      index.delete(name)
      this.digests.delete(name)
    }
    this.removedWhileIndexing.clear()
    for await (const key of this.context.storage.keys({ prefix: ARCHIVE_PREFIX, signal: options.signal })) this.archived.add(key[1])
    this.archivedKnown = true
    this.index = index
    return index
  }

  /**
   * The metadata of `name` (see the module comment), or undefined if it is
   * not stored. With `mustExist`, `CONCORD_NOT_FOUND` instead (saying when
   * the name is archived).
   */
  async meta(name: string, options: MetaOptions & { readonly mustExist: true }): Promise<NameMeta>
  async meta(name: string, options?: MetaOptions & { readonly mustExist?: boolean }): Promise<NameMeta | undefined>
  async meta(name: string, options: MetaOptions & { readonly mustExist?: boolean } = {}): Promise<NameMeta | undefined> {
    const live = options.written || options.stored ? undefined : this.cache.live(name)
    if (live) return live.state.meta
    let meta = this.decodeStored(name, await this.context.storage.get(metaKey(name), { signal: options.signal }))
    if (meta && !options.written) meta = await this.withTail(meta, options.signal)
    if (!meta && options.mustExist) {
      throw new ConcordError(
        ErrorCodes.NOT_FOUND,
        `"${name}" does not exist${(await this.context.storage.get(archiveKey(name))) ? ' (it is archived: open it first)' : ''}`,
      )
    }
    return meta
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
    const meta = this.decodeStored(name, await this.readAhead.meta(name, options))
    return meta && { meta, reader: this.readAhead.reader(name) }
  }

  /** Decodes the metadata stored under `name` (undefined: none). */
  private decodeStored(name: string, bytes: Uint8Array | undefined): NameMeta | undefined {
    if (!bytes) return undefined
    const meta = decodeMeta(bytes, name)
    if (meta.name !== name) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `metadata stored under "${name}" belongs to "${meta.name}"`)
    return meta
  }

  /**
   * The metadata of every stored name that is not archived (see the module
   * comment; damaged ones skipped), in name order, once the pipeline is
   * idle. `where` picks names by their metadata as written before anything
   * else is read for them (a name's `touched` only grows, its type never
   * changes).
   */
  async *metas(options: MetaOptions & NameRange & { readonly where?: (written: NameMeta) => boolean } = {}): AsyncGenerator<NameMeta> {
    const { signal } = options
    await this.context.committer.idle()
    const tails = options.written ? undefined : await this.tailNames(signal)
    for await (const item of this.context.storage.iterate({ prefix: META_PREFIX, ...keyRange(metaKey, options), signal })) {
      let written: NameMeta
      try {
        written = decodeMeta(item.value, item.key[1])
      } catch {
        // A damaged metadata value fails its name when opened; listings skip it.
        continue
      }
      if (options.where && !options.where(written)) continue
      if (!tails) {
        yield written
        continue
      }
      const live = this.cache.live(written.name)
      yield live ? live.state.meta : tails.has(written.name) ? await this.withTail(written, signal) : written
    }
  }

  /** The archive marker of `name`, or undefined when it is not archived. */
  async marker(name: string, options: SignalOptions = {}): Promise<ArchiveMarker | undefined> {
    const bytes = await this.context.storage.get(archiveKey(name), options)
    return bytes ? decodeArchiveMarker(bytes) : undefined
  }

  /** Every archive marker (damaged ones skipped), in name order. */
  async *markers(options: SignalOptions & NameRange = {}): AsyncGenerator<ArchiveMarker> {
    for await (const item of this.context.storage.iterate({ prefix: ARCHIVE_PREFIX, ...keyRange(archiveKey, options), signal: options.signal })) {
      try {
        yield decodeArchiveMarker(item.value)
      } catch {}
    }
  }

  /**
   * Stored metadata brought up to the end of the log: records appended after
   * the metadata was last written move `lastSeq`, `lastHash`, `logBytes` and
   * `touched` (the HLC wall time of the newest record). Records are not
   * checked here (hydration, `history`, `at` and `verify` do that).
   */
  private async withTail(meta: NameMeta, signal?: AbortSignal): Promise<NameMeta> {
    const { name } = meta
    let lastSeq = meta.lastSeq
    let logBytes = meta.logBytes
    let newest: Uint8Array | undefined
    // The chain hashed forward from the metadata's lastHash (a version 4 record's hash derives from the one before).
    let chain = meta.lastHash
    let chainSeq = meta.lastSeq
    for await (const entry of this.context.storage.iterate({ prefix: logPrefix(name), gt: logKey(name, meta.lastSeq), signal })) {
      const seq = parseSeqKey(entry.key[2] ?? '')
      if (Number.isNaN(seq)) continue
      lastSeq = seq
      logBytes += entry.value.length
      newest = entry.value
      if (seq === chainSeq + 1) {
        chain = recordHash(entry.value, name, seq, chain)
        chainSeq = seq
      }
    }
    if (!newest) return meta
    let lastHash = meta.lastHash
    let touched = meta.touched
    try {
      const record = decodeRecord(newest, { name, seq: lastSeq })
      if (chainSeq === lastSeq) lastHash = chain
      touched = Math.max(touched, record.hlc.wall)
    } catch {
      // A damaged newest record: hydration truncates it; readers report it.
    }
    return { ...meta, lastSeq, lastHash, logBytes, touched }
  }

  /** Names whose log runs past their stored metadata (they have a tail marker). */
  private async tailNames(signal?: AbortSignal): Promise<Set<string>> {
    const names = new Set<string>()
    for await (const key of this.context.storage.keys({ prefix: TAIL_PREFIX, signal })) names.add(key[1])
    return names
  }
}

/** Where {@link Names.metas} and {@link Names.markers} start, by name (in key order: UTF-8 bytes, that is code points). */
export interface NameRange {
  /** From this name on (a prefix of the names wanted starts there). */
  readonly from?: string | undefined
  /** After this name (a page's cursor). */
  readonly after?: string | undefined
}

/** The storage bounds of a {@link NameRange} for the keys `keyOf` makes. */
function keyRange(keyOf: (name: string) => StorageKey, range: NameRange): { gte?: StorageKey; gt?: StorageKey } {
  return {
    ...(range.from !== undefined ? { gte: keyOf(range.from) } : {}),
    ...(range.after !== undefined ? { gt: keyOf(range.after) } : {}),
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
