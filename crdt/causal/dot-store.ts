/**
 * Dot stores (Almeida, Shoker, Baquero 2018, section 6): the payloads of
 * causal CRDTs. A causal CRDT's state is a pair (store, context); the store
 * holds only dots of the context.
 *
 * - {@link DotSet}: a set of dots (flags, set elements).
 * - {@link DotFun}: dot -> immutable value (counters, registers).
 * - {@link DotMap}: key -> nested store (sets of elements, maps of fields).
 *
 * One generic join ({@link joinStoreInto}) serves all of them, nested to any
 * depth: a dot survives when both sides hold it, or when one side holds it
 * and the other side's context has not seen it.
 *
 * Arrays of dots are kept sorted by {@link compareDots} (the canonical
 * encoding order). Stores are mutated only by `joinStoreInto`, on the state a
 * replica owns; every other function returns new stores.
 */
import { withArticle } from '../errors.ts'
import type { CausalContext } from './causal-context.ts'
import { compareDots, type Dot } from './dot.ts'

/** A set of dots. */
export class DotSet {
  readonly kind = 'set' as const
  /** Sorted by {@link compareDots}, no duplicates. */
  dots: Dot[]

  constructor(dots: Dot[] = []) {
    this.dots = dots
  }
}

/** One dot and its value. */
export interface DotEntry<V> {
  readonly dot: Dot
  readonly value: V
}

/** A map from dots to immutable values. */
export class DotFun<V = unknown> {
  readonly kind = 'fun' as const
  /** Sorted by dot, no duplicate dots. */
  entries: Array<DotEntry<V>>

  constructor(entries: Array<DotEntry<V>> = []) {
    this.entries = entries
  }
}

/** A map from string keys to nested stores, with an index from every dot under it to its key. */
export class DotMap {
  readonly kind = 'map' as const
  /** Key -> non-empty nested store. */
  readonly entries = new Map<string, DotStore>()
  /** replica -> counter -> key of the child holding that dot. */
  private readonly index = new Map<string, Map<number, string>>()
  private indexed = 0

  /** Number of dots under this map. */
  get dotCount(): number {
    return this.indexed
  }

  /** The key holding `d`, if any. */
  keyOf(d: Dot): string | undefined {
    return this.index.get(d.replica)?.get(d.counter)
  }

  /** The index of one replica's dots (do not mutate). */
  indexOf(replica: string): ReadonlyMap<number, string> | undefined {
    return this.index.get(replica)
  }

  /** Records that `d` lives under `key`. */
  indexAdd(d: Dot, key: string): void {
    let byCounter = this.index.get(d.replica)
    if (!byCounter) this.index.set(d.replica, (byCounter = new Map()))
    if (!byCounter.has(d.counter)) this.indexed++
    byCounter.set(d.counter, key)
  }

  /** Forgets `d`. */
  indexDelete(d: Dot): void {
    const byCounter = this.index.get(d.replica)
    if (byCounter?.delete(d.counter)) {
      this.indexed--
      if (byCounter.size === 0) this.index.delete(d.replica)
    }
  }

  /** Sets a child (building a store by hand: deltas, decoding). Empty children are dropped. */
  setChild(key: string, child: DotStore): void {
    const old = this.entries.get(key)
    if (old) for (const d of storeDots(old)) this.indexDelete(d)
    if (isEmptyStore(child)) {
      this.entries.delete(key)
      return
    }
    this.entries.set(key, child)
    for (const d of storeDots(child)) this.indexAdd(d, key)
  }
}

/** Any dot store. */
export type DotStore = DotSet | DotFun<unknown> | DotMap

/** Receives the dots a join adds to or removes from a store. */
export interface JoinTrack {
  added(d: Dot): void
  removed(d: Dot): void
}

/** An empty store of the same kind as `store`. */
export function emptyLike(store: DotStore): DotStore {
  switch (store.kind) {
    case 'set':
      return new DotSet()
    case 'fun':
      return new DotFun()
    case 'map':
      return new DotMap()
  }
}

/** True when the store holds no dot (the bottom element). */
export function isEmptyStore(store: DotStore): boolean {
  switch (store.kind) {
    case 'set':
      return store.dots.length === 0
    case 'fun':
      return store.entries.length === 0
    case 'map':
      return store.entries.size === 0
  }
}

/** Every dot in the store (nested ones included). */
export function* storeDots(store: DotStore): IterableIterator<Dot> {
  switch (store.kind) {
    case 'set':
      yield* store.dots
      return
    case 'fun':
      for (const entry of store.entries) yield entry.dot
      return
    case 'map':
      for (const child of store.entries.values()) yield* storeDots(child)
  }
}

/** A deep copy. */
export function cloneStore<S extends DotStore>(store: S): S {
  switch (store.kind) {
    case 'set':
      return new DotSet(store.dots.slice()) as S
    case 'fun':
      return new DotFun(store.entries.slice()) as S
    case 'map': {
      const out = new DotMap()
      for (const [key, child] of store.entries) out.setChild(key, cloneStore(child))
      return out as S
    }
  }
}

/**
 * Joins `(d, dctx)` into `(t, tctx)`, mutating the store `t` only (the caller
 * joins the contexts afterwards). Returns true when `t` changed. Both stores
 * must be of the same kind.
 */
export function joinStoreInto(t: DotStore, tctx: CausalContext, d: DotStore, dctx: CausalContext, track?: JoinTrack): boolean {
  if (t.kind !== d.kind) throw new TypeError(`joinStoreInto: ${withArticle(t.kind)} store cannot join ${withArticle(d.kind)} store`)
  switch (t.kind) {
    case 'set':
      return joinDotSets(t, tctx, d as DotSet, dctx, track)
    case 'fun':
      return joinDotFuns(t, tctx, d as DotFun, dctx, track)
    case 'map':
      return joinDotMaps(t, tctx, d as DotMap, dctx, track)
  }
}

/** Sorted merge shared by dot sets and dot funs. */
function mergeSorted<E>(
  mine: E[],
  theirs: E[],
  dotOf: (e: E) => Dot,
  tctx: CausalContext,
  dctx: CausalContext,
  track: JoinTrack | undefined,
): { result: E[]; changed: boolean } {
  const result: E[] = []
  let changed = false
  let i = 0
  let j = 0
  while (i < mine.length || j < theirs.length) {
    const order = i >= mine.length ? 1 : j >= theirs.length ? -1 : compareDots(dotOf(mine[i]), dotOf(theirs[j]))
    if (order === 0) {
      result.push(mine[i])
      i++
      j++
    } else if (order < 0) {
      const e = mine[i++]
      if (dctx.has(dotOf(e))) {
        changed = true
        track?.removed(dotOf(e))
      } else {
        result.push(e)
      }
    } else {
      const e = theirs[j++]
      if (!tctx.has(dotOf(e))) {
        changed = true
        result.push(e)
        track?.added(dotOf(e))
      }
    }
  }
  // A few entries pushed into an empty array sit in room for 17 or more; the store keeps an array of their size.
  return { result: changed && result.length < SMALL_STORE ? result.slice() : result, changed }
}

/** Entries below which a joined store's array is copied to its size (see {@link mergeSorted}). */
const SMALL_STORE = 16

function joinDotSets(t: DotSet, tctx: CausalContext, d: DotSet, dctx: CausalContext, track?: JoinTrack): boolean {
  const { result, changed } = mergeSorted(t.dots, d.dots, (x) => x, tctx, dctx, track)
  if (changed) t.dots = result
  return changed
}

function joinDotFuns(t: DotFun, tctx: CausalContext, d: DotFun, dctx: CausalContext, track?: JoinTrack): boolean {
  const { result, changed } = mergeSorted(t.entries, d.entries, (x) => x.dot, tctx, dctx, track)
  if (changed) t.entries = result
  return changed
}

/** Keys of `t` holding a dot of `ctx`, found through the index when that is cheaper than a scan. */
function keysTouchedBy(t: DotMap, ctx: CausalContext, into: Set<string>): void {
  if (ctx.size > t.dotCount) {
    for (const key of t.entries.keys()) into.add(key)
    return
  }
  for (const replica of ctx.replicas()) {
    const byCounter = t.indexOf(replica)
    if (!byCounter) continue
    const counters = ctx.get(replica)!
    if (counters.size <= byCounter.size) {
      for (const counter of counters.values()) {
        const key = byCounter.get(counter)
        if (key !== undefined) into.add(key)
      }
    } else {
      for (const [counter, key] of byCounter) if (counters.has(counter)) into.add(key)
    }
  }
}

function joinDotMaps(t: DotMap, tctx: CausalContext, d: DotMap, dctx: CausalContext, track?: JoinTrack): boolean {
  const candidates = new Set<string>(d.entries.keys())
  keysTouchedBy(t, dctx, candidates)
  let changed = false
  for (const key of candidates) {
    const theirs = d.entries.get(key)
    let mine = t.entries.get(key)
    const isNew = mine === undefined
    if (mine === undefined) mine = emptyLike(theirs!)
    const childTrack: JoinTrack = {
      added: (x) => {
        t.indexAdd(x, key)
        track?.added(x)
      },
      removed: (x) => {
        t.indexDelete(x)
        track?.removed(x)
      },
    }
    if (!joinStoreInto(mine, tctx, theirs ?? emptyLike(mine), dctx, childTrack)) continue
    changed = true
    if (isEmptyStore(mine)) t.entries.delete(key)
    else if (isNew) t.entries.set(key, mine)
  }
  return changed
}

/**
 * A new store holding only the dots of `store` outside `exclude` (what a
 * replica whose context is `exclude` may lack). `include`, when given, is a
 * superset of the surviving dots; it lets a big map visit only the keys
 * holding them.
 */
export function restrictStore(store: DotStore, exclude: CausalContext, include?: CausalContext): DotStore {
  switch (store.kind) {
    case 'set':
      return new DotSet(store.dots.filter((x) => !exclude.has(x)))
    case 'fun':
      return new DotFun(store.entries.filter((e) => !exclude.has(e.dot)))
    case 'map': {
      const out = new DotMap()
      let keys: Iterable<string> = store.entries.keys()
      if (include) {
        const touched = new Set<string>()
        keysTouchedBy(store, include, touched)
        keys = touched
      }
      for (const key of keys) {
        const child = store.entries.get(key)
        if (child) out.setChild(key, restrictStore(child, exclude, include))
      }
      return out
    }
  }
}

/**
 * A new store holding only the dots of `store` that are in `ctx` (a map
 * visits only the keys holding them, through its index).
 */
export function storeWithin(store: DotStore, ctx: CausalContext): DotStore {
  switch (store.kind) {
    case 'set':
      return new DotSet(store.dots.filter((x) => ctx.has(x)))
    case 'fun':
      return new DotFun(store.entries.filter((e) => ctx.has(e.dot)))
    case 'map': {
      const out = new DotMap()
      const keys = new Set<string>()
      keysTouchedBy(store, ctx, keys)
      for (const key of keys) {
        const child = store.entries.get(key)
        if (child) out.setChild(key, storeWithin(child, ctx))
      }
      return out
    }
  }
}

/** Adds every dot of the store to `ctx`. */
export function addStoreDots(ctx: CausalContext, store: DotStore): void {
  for (const x of storeDots(store)) ctx.add(x)
}
