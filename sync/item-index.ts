/**
 * The item set of a host kept up to date as names change, instead of
 * listing, reading and sorting every name for each reconciliation (issue
 * 15: at 100,000 names that was ~330 ms of a 467 ms reconnect).
 *
 * The first {@link ItemIndex.snapshot} lists every name (as
 * {@link collectAllItems} does); after that the host reports the names
 * whose listing, type or digest may have changed ({@link ItemIndex.touch}),
 * and a snapshot reads those again, plus the names the host says may change
 * without a report (`volatile`: the ones it holds in memory), and merges
 * them into the sorted columns in O(n + k log k). Snapshots are immutable
 * ({@link ItemSet}): a reconciliation keeps its own while the index moves
 * on. Between snapshots, once the touched names reach half the set, those
 * whose digest the host knows without reading are merged at once, so that
 * a stream of changes (a first sync of 100,000 names) does not leave them
 * all for the next reconnect; a merge copies the whole set, so a set that
 * grows by a stream is copied about three times in all (at a sixteenth it
 * was seventeen: ~1 KB of garbage per name of a first sync).
 */
import { stateDigest } from '../crdt/state-digest.ts'
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { HostedName, MaybePromise, SyncHost } from './host.ts'
import { matchesFilter, type NameFilter } from './names.ts'
import { compareNames, type Item, ItemSet, itemOf } from './reconcile.ts'

/** What an {@link ItemIndex} reads of its host. */
export interface ItemSource {
  /** Every listed name with its type (the first snapshot). */
  list(): MaybePromise<Iterable<HostedName>>
  /** The type of `name` if it is listed now, else undefined (gone, unreadable, not stored yet). */
  listedType(name: string): ReplicaType | undefined
  /** Names whose digest may change without a {@link ItemIndex.touch} (held in memory): read again at every snapshot. */
  volatile?(): Iterable<string>
  /** The state digest of `name` where known without reading it; undefined: it is held and computed. */
  digest?(name: string): Uint8Array | undefined
  /** The state digest of `name` where known without computing one (merges between snapshots take only those); default {@link digest}. */
  knownDigest?(name: string): Uint8Array | undefined
  version(name: string): Uint8Array
  deltaSince(name: string, version: Uint8Array | null): Uint8Array | null
  hold?(names: readonly string[]): MaybePromise<() => void>
  yieldTurn?(): Promise<void>
}

/** Touched names from which they are merged between snapshots: at least this many, and half the set. */
const EAGER_MIN = 256
/** Names held at a time while digests are read. */
const SLICE_NAMES = 64

/** Whether `error` says the host cannot read a name (gone, damaged, not held): the name is left out. */
function unreadable(error: unknown): boolean {
  return isConcordError(error, ErrorCodes.NOT_FOUND) || isConcordError(error, ErrorCodes.CORRUPT_RECORD)
}

/** The digest of a readable name: the source's, or computed from its version (the name is held). */
function digestOfHeld(source: Omit<ItemSource, 'listedType' | 'volatile'>, name: string, type: ReplicaType): Uint8Array {
  const known = source.digest?.(name)
  if (known) return known
  const version = source.version(name)
  return stateDigest(name, type, version, source.deltaSince(name, version))
}

/**
 * Reads the digests of `pending` names, held in slices with a turn between
 * them; a name that cannot be read goes to `gone`.
 */
async function readHeld(
  source: Omit<ItemSource, 'listedType' | 'volatile'>,
  pending: ReadonlyArray<HostedName>,
  found: (item: Item) => void,
  gone: (name: string) => void,
): Promise<void> {
  for (let start = 0; start < pending.length; start += SLICE_NAMES) {
    if (source.yieldTurn) await source.yieldTurn()
    const slice = pending.slice(start, start + SLICE_NAMES)
    const release = source.hold ? await source.hold(slice.map((info) => info.name)) : undefined
    try {
      for (const { name, type } of slice) {
        try {
          found(itemOf(name, type, digestOfHeld(source, name, type)))
        } catch (error) {
          if (!unreadable(error)) throw error
          gone(name)
        }
      }
    } finally {
      release?.()
    }
  }
}

/** Every listed name's item, sorted (what a host without an index reads for each reconciliation). */
export async function collectAllItems(source: Omit<ItemSource, 'listedType' | 'volatile'>, keep: (name: string) => boolean = () => true): Promise<ItemSet> {
  const items: Item[] = []
  const unknown: HostedName[] = []
  for (const info of await source.list()) {
    if (!keep(info.name)) continue
    const digest = source.digest?.(info.name)
    if (digest) items.push(itemOf(info.name, info.type, digest))
    else unknown.push(info)
  }
  await readHeld(
    source,
    unknown,
    (item) => items.push(item),
    () => undefined,
  )
  items.sort((a, b) => compareNames(a.name, b.name))
  return new ItemSet(items)
}

/**
 * The item set of the local names within `filter` that the remote may read
 * (`readable`): from the host's index where it keeps one
 * ({@link SyncHost.items}), filtered without sorting; else every name
 * listed, its digest from the host where it knows it without loading the
 * name ({@link SyncHost.digest}), else read from the name, held in slices.
 */
export async function collectItems(host: SyncHost, filter: NameFilter, readable: (name: string) => boolean): Promise<ItemSet> {
  const keep = (name: string): boolean => matchesFilter(filter, name) && readable(name)
  if (host.items) return (await host.items()).filter(keep)
  return collectAllItems(host, keep)
}

/** `base` with `changes` merged in (an item: added or replaced; null: removed); `changes` sorted by name. */
export function mergeItems(base: ItemSet, changes: ReadonlyArray<readonly [string, Item | null]>): ItemSet {
  const capacity = base.size + changes.length
  const names: string[] = []
  const types: ReplicaType[] = []
  const h0 = new Uint32Array(capacity)
  const h1 = new Uint32Array(capacity)
  let out = 0
  let i = 0
  const copyBase = (): void => {
    names.push(base.names[i])
    types.push(base.types[i])
    h0[out] = base.h0[i]
    h1[out] = base.h1[i]
    out++
    i++
  }
  for (const [name, item] of changes) {
    while (i < base.size && base.names[i] < name) copyBase()
    if (i < base.size && base.names[i] === name) i++ // replaced or removed
    if (item) {
      names.push(name)
      types.push(item.type)
      h0[out] = item.h0
      h1[out] = item.h1
      out++
    }
  }
  while (i < base.size) copyBase()
  return new ItemSet(names, types, h0.slice(0, out), h1.slice(0, out))
}

/** A host's item set, kept as its names change (see the module comment). */
export class ItemIndex {
  private current: ItemSet | undefined
  private touched = new Set<string>()
  /** A snapshot under way: touched names are kept for the next one, nothing is merged meanwhile. */
  private running = false
  /** Touched names from which the next eager merge runs (after one that left many: twice as many). */
  private eagerAt = 0
  private eagerQueued = false
  private chain: Promise<unknown> = Promise.resolve()
  /** Snapshots that listed every name, for statistics and tests. */
  fullBuilds = 0
  /** Names read again (touched or volatile) by snapshots and eager merges. */
  reread = 0
  /** Merges between snapshots (each copies the whole set), for statistics and tests. */
  eagerMerges = 0

  constructor(private readonly source: ItemSource) {}

  /** `name`'s listing, type or digest may have changed. */
  touch(name: string): void {
    // Before the first snapshot nothing is kept: it lists every name.
    if (this.current === undefined && !this.running) return
    this.touched.add(name)
    if (!this.eagerQueued && !this.running && this.current && this.touched.size >= Math.max(EAGER_MIN, this.current.size >> 1, this.eagerAt)) {
      // After the host's event is done (its state settled), not inside it.
      this.eagerQueued = true
      queueMicrotask(() => {
        this.eagerQueued = false
        if (!this.running) this.mergeKnown()
      })
    }
  }

  /** The item set of every listed name now (immutable). Snapshots run one at a time. */
  snapshot(): Promise<ItemSet> {
    const run = this.chain.then(() => this.take())
    this.chain = run.catch(() => undefined)
    return run
  }

  private async take(): Promise<ItemSet> {
    this.running = true
    const touched = this.touched
    this.touched = new Set()
    try {
      if (this.current === undefined) {
        this.fullBuilds++
        this.current = await collectAllItems(this.source)
        return this.current
      }
      for (const name of this.source.volatile?.() ?? []) touched.add(name)
      if (touched.size === 0) return this.current
      const changes = new Map<string, Item | null>()
      const unknown: HostedName[] = []
      for (const name of touched) {
        this.reread++
        const type = this.source.listedType(name)
        if (type === undefined) {
          changes.set(name, null)
          continue
        }
        const digest = this.source.digest?.(name)
        if (digest) changes.set(name, itemOf(name, type, digest))
        else unknown.push({ name, type })
      }
      await readHeld(
        this.source,
        unknown,
        (item) => changes.set(item.name, item),
        (name) => changes.set(name, null),
      )
      this.current = mergeItems(this.current, sortedChanges(changes))
      return this.current
    } catch (error) {
      // Nothing read is lost: the names are read again next time.
      for (const name of touched) this.touched.add(name)
      throw error
    } finally {
      this.running = false
      this.eagerAt = 0
    }
  }

  /** Merges the touched names whose digest the source knows without reading or computing (and those gone); the rest wait for the next snapshot. */
  private mergeKnown(): void {
    const current = this.current!
    const volatile = new Set(this.source.volatile?.() ?? [])
    const changes = new Map<string, Item | null>()
    for (const name of this.touched) {
      // A name in memory is read again by the next snapshot anyway (and touched when it leaves memory).
      if (volatile.has(name)) {
        this.touched.delete(name)
        continue
      }
      this.reread++
      const type = this.source.listedType(name)
      if (type === undefined) {
        changes.set(name, null)
        continue
      }
      const digest = this.source.knownDigest ? this.source.knownDigest(name) : this.source.digest?.(name)
      if (digest) changes.set(name, itemOf(name, type, digest))
    }
    for (const name of changes.keys()) this.touched.delete(name)
    if (changes.size > 0) {
      this.eagerMerges++
      this.current = mergeItems(current, sortedChanges(changes))
    }
    this.eagerAt = this.touched.size * 2
  }
}

function sortedChanges(changes: ReadonlyMap<string, Item | null>): Array<readonly [string, Item | null]> {
  return [...changes].sort((a, b) => compareNames(a[0], b[0]))
}
