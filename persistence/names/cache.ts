/**
 * The bounded cache of hydrated names. The most recently used `limit` names
 * are held; older ones are evicted once everything of theirs is durable, no
 * checkpoint is queued and no reader pins them ({@link NameEntry.evictable}). An evicted entry stays reachable through a weak
 * reference while the application still holds its replica, so a held replica
 * keeps being persisted and `open` hands the same object back.
 */
import type { NameEntry as Entry } from './entry.ts'

/** Entries an addition to the cache looks at for one to evict (see {@link NameCache.evictIfNeeded}). */
const ADD_EVICTION_LOOKS = 64

/** @internal the owner's cache of hydrated names (persistence/names/owner.ts). */
export class NameCache {
  private readonly cache = new Map<string, Entry>()
  private readonly evicted = new Map<string, WeakRef<Entry>>()
  /** Held names whose metadata write was queued so that they can leave (see {@link evictIfNeeded}). */
  private readonly catchingUp = new Set<Entry>()
  private readonly cleanup = new FinalizationRegistry<string>((name) => {
    const ref = this.evicted.get(name)
    if (ref && ref.deref() === undefined) this.evicted.delete(name)
  })

  /**
   * @param limit names kept hydrated (at least 1)
   * @param catchUp called instead of evicting names whose stored metadata
   *   lags their log (once per walk, with all of them): it queues a metadata
   *   write (the names are evicted once that is written), so names that
   *   leave memory have current metadata.
   * @param evicted called for each entry evicted (still reachable while the
   *   application holds its replica).
   */
  constructor(
    private readonly limit: number,
    private readonly catchUp: (entries: Entry[]) => void = () => undefined,
    private readonly onEvicted: (entry: Entry) => void = () => undefined,
  ) {}

  /** The live entry of `name` (held or evicted but still reachable), without touching the LRU order. */
  live(name: string): Entry | undefined {
    const cached = this.cache.get(name)
    if (cached) return cached
    const entry = this.evicted.get(name)?.deref()
    if (entry && !entry.detached) return entry
    return undefined
  }

  /** The live entry of `name`, marked most recently used (an evicted one is held again). */
  use(name: string): Entry | undefined {
    let entry = this.cache.get(name)
    if (entry) {
      // Used again: it stays.
      this.catchingUp.delete(entry)
      this.cache.delete(name)
      this.cache.set(name, entry)
      return entry
    }
    entry = this.evicted.get(name)?.deref()
    if (entry && !entry.detached) {
      this.revived++
      this.evicted.delete(name)
      this.cache.set(name, entry)
      this.evictIfNeeded(ADD_EVICTION_LOOKS)
      return entry
    }
    return undefined
  }

  /** Evicted entries taken back into the cache (still reachable, so not read from storage again). */
  revived = 0

  /** Holds a newly hydrated entry. */
  add(entry: Entry): void {
    this.cache.set(entry.name, entry)
    this.evictIfNeeded(ADD_EVICTION_LOOKS)
  }

  /** True when `name` is held (recently used). */
  busy(name: string): boolean {
    return this.cache.has(name)
  }

  /** Forgets `name`: its replica stops being persisted. */
  detach(name: string): void {
    const entry = this.live(name)
    if (!entry) return
    entry.detach()
    this.catchingUp.delete(entry)
    this.cache.delete(name)
    this.evicted.delete(name)
  }

  /** The held entries, least recently used first. */
  held(): IterableIterator<Entry> {
    return this.cache.values()
  }

  /** Every live entry (held, or evicted but still reachable). */
  allLive(): Set<Entry> {
    const live = new Set(this.cache.values())
    for (const ref of this.evicted.values()) {
      const entry = ref.deref()
      if (entry && !entry.detached) live.add(entry)
    }
    return live
  }

  /** Drops every entry (on close). */
  clear(): void {
    this.catchingUp.clear()
    this.cache.clear()
    this.evicted.clear()
  }

  /** Number of held names. */
  get size(): number {
    return this.cache.size
  }

  /**
   * Evicts the least recently used durable names beyond the limit. A name
   * whose metadata is catching up counts as leaving, so that a more recently
   * used name is not evicted in its place. `looks`: at most this many
   * entries are looked at (a name added looks at a few: while a commit of
   * thousands of names holds them, none can leave, and looking at all of
   * them for each would be quadratic; the walk after each durable write
   * looks at every one).
   */
  evictIfNeeded(looks = Number.POSITIVE_INFINITY): void {
    const full = looks === Number.POSITIVE_INFINITY
    // A short walk after one that found nothing to do is skipped until the next full walk (see {@link stuck}).
    if (!full && this.stuck) return
    let excess = this.cache.size - this.limit
    if (excess <= 0) return
    const before = excess
    const catchingUp: Entry[] = []
    for (const [name, entry] of this.cache) {
      if (excess <= 0 || looks-- <= 0) break
      if (this.catchingUp.has(entry) && entry.state.metaBehind) {
        excess--
        continue
      }
      if (!entry.evictable) continue
      if (entry.state.metaBehind || entry.takeDigestCatchUp()) {
        this.catchingUp.add(entry)
        catchingUp.push(entry)
        excess--
        continue
      }
      excess--
      this.catchingUp.delete(entry)
      this.cache.delete(name)
      // Still reachable while the application holds the replica: keep using it then.
      this.evicted.set(name, new WeakRef(entry))
      this.cleanup.register(entry.replica, name)
      this.onEvicted(entry)
    }
    if (catchingUp.length > 0) this.catchUp(catchingUp)
    this.stuck = !full && excess === before
  }

  /**
   * The last short walk (of a name added or revived) found no entry to
   * evict or catch up: the next ones are skipped until a full walk (after
   * each durable write, a catch-up written, a lease released), which is
   * when held entries can become evictable. While a commit of thousands of
   * new names holds them, each added name would otherwise walk in vain.
   */
  private stuck = false
}
