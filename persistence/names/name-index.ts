/**
 * The index of a store's names: every stored (not archived) name with its
 * type, the state digests of those not in memory, and the archived names.
 * Loaded by the first list (or a {@link NameIndex.preload} in the
 * background), kept up to date since by the owner of the names
 * (persistence/names/owner.ts), which tells it what is stored, evicted and
 * removed. With it, a name is known to be absent without reading storage.
 */
import type { ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import { ARCHIVE_PREFIX, META_PREFIX } from '../format/keys.ts'
import { currentDigest } from '../format/name-meta.ts'
import type { SignalOptions } from '../storage/storage.ts'
import type { NameCache } from './cache.ts'
import { DigestTable } from './digest-table.ts'
import { storedMetas, tailNames } from './stored-meta.ts'

/** @internal the owner's index of stored names, their types and digests. */
export class NameIndex {
  /** Stored (not archived) names and their types, loaded by the first {@link list}, kept since. */
  types: Map<string, ReplicaType> | undefined
  private indexing: Promise<Map<string, ReplicaType>> | undefined
  /** Names removed while the index loads (the load's scan may still hold them). */
  private readonly removedWhileIndexing = new Set<string>()
  /** State digests of stored names that are not hydrated, where known (FORMAT.md "Name metadata"); kept with the index. */
  readonly digests = new DigestTable()
  /**
   * Archived names (those with an archive marker), loaded with the index and
   * kept since (a superset: a stale member only costs a storage read). With
   * the index, they tell that a name is absent without reading storage.
   */
  private readonly archived = new Set<string>()
  private archivedKnown = false
  /** Stops the index load {@link preload} started, if it runs. */
  private preloading: AbortController | undefined

  /** @param cache the owner's cache of hydrated names (the names in memory that {@link list} adds). */
  constructor(
    private readonly context: StoreContext,
    private readonly cache: NameCache,
  ) {}

  /**
   * Notes that stored `name` of `type` left memory, or changed while out of
   * it: listed with `type`, with `digest` as its state digest (undefined:
   * unknown).
   */
  noteStored(name: string, type: ReplicaType, digest: Uint8Array | undefined): void {
    this.types?.set(name, type)
    if (digest) this.digests.set(name, digest)
    else this.digests.delete(name)
  }

  /** `name` is no longer stored (expired, archived, deleted): unlisted, its digest forgotten. */
  remove(name: string): void {
    this.types?.delete(name)
    this.digests.delete(name)
    this.archived.delete(name)
    if (this.indexing) this.removedWhileIndexing.add(name)
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
   * storage: absent from the loaded index of stored names and from the
   * archived ones (the owner checks that it is not hydrated or being
   * hydrated). False when unknown.
   */
  knownAbsent(name: string): boolean {
    return this.types !== undefined && this.indexing === undefined && this.archivedKnown && !this.types.has(name) && !this.archived.has(name)
  }

  /**
   * On open: a store that holds no name and no archive marker has an empty
   * index at once (two key seeks), so new names are created without reading
   * storage from the first one; otherwise the index loads with the first
   * {@link list}.
   */
  async primeIfEmpty(): Promise<void> {
    if (this.types !== undefined || this.indexing !== undefined) return
    for (const prefix of [META_PREFIX, ARCHIVE_PREFIX]) {
      for await (const _ of this.context.storage.keys({ prefix, limit: 1 })) return
    }
    if (this.types !== undefined || this.indexing !== undefined) return
    this.types = new Map()
    this.archivedKnown = true
  }

  /**
   * Every stored name that is not archived, with its type, in no particular
   * order; hydrates nothing. A name whose first write is under way is
   * listed: its change was applied and announced (a sync answer must cover
   * it); one only opened in memory, with nothing to write yet, is not.
   */
  async list(options: SignalOptions = {}): Promise<Array<{ readonly name: string; readonly type: ReplicaType }>> {
    const index = this.types ?? (await (this.indexing ?? this.startIndexing(options.signal)))
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
    if (this.types !== undefined || this.indexing !== undefined) return
    // Stopped by clear() (the store closes): the load then rejects, and nobody waits for it.
    const stop = (this.preloading = new AbortController())
    this.startIndexing(stop.signal)
      .finally(() => {
        if (this.preloading === stop) this.preloading = undefined
      })
      .catch(() => undefined)
  }

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
    const tails = await tailNames(this.context, options.signal)
    for await (const meta of storedMetas(this.context, this.cache, { signal: options.signal, written: true })) {
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
    this.types = index
    return index
  }

  /** Forgets the index (on close); a load under way from {@link preload} is stopped. */
  clear(): void {
    this.preloading?.abort()
    this.types = undefined
    this.digests.clear()
    this.archived.clear()
    this.archivedKnown = false
  }
}
