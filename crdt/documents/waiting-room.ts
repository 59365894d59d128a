/**
 * Document updates that wait for a missing dependency, held outside the
 * library until it arrives.
 *
 * Why outside: Yjs 13.6 keeps such structs in `store.pendingStructs` and, on
 * every later update, merges the new remainder into the whole pending
 * update (`mergeUpdatesV2`) and retries all of it, so each update costs time
 * in proportion to everything pending: 600 waiting updates of 50 KB took
 * ~30 s of CPU. Here an update that cannot integrate is parked with its
 * requirements (per key a threshold: a Yjs client's clock, or an Automerge
 * change hash, with threshold 1 meaning "known"); when the document's state
 * of a key moves on, only the requirements it meets are visited (a binary
 * heap per key), and an update whose last requirement is met is handed back
 * to be applied, once. So holding and releasing take time linear in what is
 * held.
 *
 * Bounds: per document `maxUpdates` and `maxBytes`, and per sender (an
 * origin key) the limits of a shared {@link WaitingBudget}. An update that
 * does not fit is dropped and counted; the sender's anti-entropy brings it
 * again later (a dropped update is never acknowledged as applied state: the
 * version does not include it).
 */
import type { DocumentLimits } from './options.ts'

/** One parked update. */
export interface WaitingUpdate<C = unknown> {
  readonly bytes: Uint8Array
  /** What the document keeps about it (the keys applying it moves on). */
  readonly context: C
  /** Requirements not met yet. */
  unmet: number
  /** The sender's budget key. */
  readonly key: string
  /** Set once it left the room (applied, dropped or cleared). */
  gone: boolean
}

/** Counters of a room or a budget. */
export interface WaitingStats {
  /** Updates waiting now. */
  readonly updates: number
  /** Their bytes. */
  readonly bytes: number
  /** Updates dropped because a budget was full (since creation; a budget counts its documents' drops too). */
  readonly dropped: number
  /** Updates that waited and were applied once their dependencies came. */
  readonly released: number
}

/** Per-sender bounds shared by many documents. */
export interface WaitingBudgetLimits {
  /** Most waiting updates of one sender over all documents (default 4,000). */
  readonly maxUpdates: number
  /** Most bytes of one sender's waiting updates over all documents (default 32 MiB). */
  readonly maxBytes: number
}

/** The per-sender limits used when none are given. */
export const DEFAULT_WAITING_BUDGET: WaitingBudgetLimits = Object.freeze({ maxUpdates: 4000, maxBytes: 32 * 1024 * 1024 })

/**
 * Who sent an update, for the per-sender budget: the `remoteAgentId` of the
 * origin (a sync session), else one key for everything local or unknown.
 */
export function defaultWaitingKey(origin: unknown): string {
  const peer = (origin as { remoteAgentId?: unknown } | null | undefined)?.remoteAgentId
  return typeof peer === 'string' ? `peer:${peer}` : 'other'
}

/**
 * Waiting updates of many documents, bounded per sender. One per store (or
 * process); documents hold their updates against it. Released when the
 * updates leave their room, or when a room is garbage collected.
 */
export class WaitingBudget {
  readonly limits: WaitingBudgetLimits
  private readonly held = new Map<string, { updates: number; bytes: number }>()
  private totals = { updates: 0, bytes: 0, dropped: 0, released: 0 }
  /** Rooms collected with updates still held give them back. */
  private readonly rooms = new FinalizationRegistry<Map<string, { updates: number; bytes: number }>>((holdings) => {
    for (const [key, { updates, bytes }] of holdings) this.give(key, updates, bytes)
  })

  constructor(
    limits: Partial<WaitingBudgetLimits> = {},
    readonly keyOf: (origin: unknown) => string = defaultWaitingKey,
  ) {
    this.limits = { ...DEFAULT_WAITING_BUDGET, ...limits }
  }

  /** @internal registers a room's holdings, returned if the room is collected. */
  track(room: object, holdings: Map<string, { updates: number; bytes: number }>): void {
    this.rooms.register(room, holdings)
  }

  /** @internal takes `bytes` for `key` if they fit. */
  take(key: string, bytes: number): boolean {
    const entry = this.held.get(key) ?? { updates: 0, bytes: 0 }
    if (entry.updates + 1 > this.limits.maxUpdates || entry.bytes + bytes > this.limits.maxBytes) {
      this.totals.dropped++
      return false
    }
    entry.updates++
    entry.bytes += bytes
    this.held.set(key, entry)
    this.totals.updates++
    this.totals.bytes += bytes
    return true
  }

  /** @internal gives back what {@link take} took. */
  give(key: string, updates: number, bytes: number): void {
    const entry = this.held.get(key)
    if (entry === undefined) return
    entry.updates -= updates
    entry.bytes -= bytes
    this.totals.updates -= updates
    this.totals.bytes -= bytes
    if (entry.updates <= 0) this.held.delete(key)
  }

  /** @internal counts an update a room dropped over its own (per-document) limits. */
  countDropped(): void {
    this.totals.dropped++
  }

  /** @internal counts updates released by a room. */
  countReleased(n: number): void {
    this.totals.released += n
  }

  /** Waiting updates and bytes now (all senders), and what was dropped or released. */
  stats(): WaitingStats {
    return { ...this.totals }
  }

  /** What one sender holds now. */
  heldBy(key: string): { updates: number; bytes: number } {
    const entry = this.held.get(key)
    return entry ? { ...entry } : { updates: 0, bytes: 0 }
  }
}

/** A binary min-heap of (threshold, update) pairs. */
/** Waiting updates of any payload type, ordered by threshold. */
// biome-ignore lint/suspicious/noExplicitAny: the heap holds updates of every payload type
type AnyWaiting = WaitingUpdate<any>

class RequirementHeap {
  private readonly thresholds: number[] = []
  private readonly updates: Array<AnyWaiting> = []

  get size(): number {
    return this.thresholds.length
  }

  push(threshold: number, update: AnyWaiting): void {
    const t = this.thresholds
    const u = this.updates
    let i = t.length
    t.push(threshold)
    u.push(update)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (t[parent] <= threshold) break
      t[i] = t[parent]
      u[i] = u[parent]
      i = parent
    }
    t[i] = threshold
    u[i] = update
  }

  /** Removes and passes every update whose threshold is at most `value`. */
  popUpTo(value: number, met: (update: AnyWaiting) => void): void {
    const t = this.thresholds
    while (t.length > 0 && t[0] <= value) met(this.pop())
  }

  private pop(): AnyWaiting {
    const t = this.thresholds
    const u = this.updates
    const top = u[0]
    const lastT = t.pop()!
    const lastU = u.pop()!
    if (t.length > 0) {
      let i = 0
      for (;;) {
        const left = 2 * i + 1
        if (left >= t.length) break
        const child = left + 1 < t.length && t[left + 1] < t[left] ? left + 1 : left
        if (t[child] >= lastT) break
        t[i] = t[child]
        u[i] = u[child]
        i = child
      }
      t[i] = lastT
      u[i] = lastU
    }
    return top
  }
}

/**
 * The waiting updates of one document. The document tells it each
 * update's unmet requirements ({@link hold}) and, after every change of its
 * state, how far each key moved ({@link advance}); it gives back the updates
 * that became ready, in the order their last requirement was met.
 */
export class WaitingRoom<K, C = unknown> {
  private readonly byKey = new Map<K, RequirementHeap>()
  /** Updates whose requirements are all met, from `readyHead` on. */
  private ready: Array<WaitingUpdate<C>> = []
  private readyHead = 0
  /** What this room holds per sender key (shared with the budget's finalizer). */
  private readonly holdings = new Map<string, { updates: number; bytes: number }>()
  private count = 0
  private heldBytes = 0
  private dropped = 0
  private released = 0

  constructor(
    private readonly limits: Pick<DocumentLimits, 'maxWaitingUpdates' | 'maxWaitingBytes'>,
    private readonly budget?: WaitingBudget,
  ) {
    budget?.track(this, this.holdings)
  }

  /** Updates waiting now. */
  get size(): number {
    return this.count
  }

  /** This document's counters. */
  stats(): WaitingStats {
    return { updates: this.count, bytes: this.heldBytes, dropped: this.dropped, released: this.released }
  }

  /**
   * Parks `bytes` until every requirement is met (`[key, threshold]`: the
   * document's state of `key` must reach `threshold`). Returns the copy it
   * holds (what {@link next} gives back when it is let in), or undefined,
   * counting a drop, when a budget is full.
   */
  hold(bytes: Uint8Array, origin: unknown, requirements: Iterable<readonly [K, number]>, context: C): Uint8Array | undefined {
    const size = bytes.length
    const key = this.budget?.keyOf(origin) ?? 'other'
    if (this.count + 1 > this.limits.maxWaitingUpdates || this.heldBytes + size > this.limits.maxWaitingBytes) {
      this.dropped++
      this.budget?.countDropped()
      return undefined
    }
    if (this.budget !== undefined && !this.budget.take(key, size)) {
      this.dropped++
      return undefined
    }
    // A copy: the bytes may be a view into a larger received frame.
    // (The origin is not kept: a closed session must not stay referenced by what it sent.)
    const update: WaitingUpdate<C> = { bytes: bytes.slice(), context, unmet: 0, key, gone: false }
    for (const [requirementKey, threshold] of requirements) {
      let heap = this.byKey.get(requirementKey)
      if (heap === undefined) this.byKey.set(requirementKey, (heap = new RequirementHeap()))
      heap.push(threshold, update)
      update.unmet++
    }
    this.count++
    this.heldBytes += size
    const holding = this.holdings.get(key) ?? { updates: 0, bytes: 0 }
    holding.updates++
    holding.bytes += size
    this.holdings.set(key, holding)
    if (update.unmet === 0) this.ready.push(update)
    return update.bytes
  }

  /** Keys with waiting requirements (to know which states to look at). */
  keys(): IterableIterator<K> {
    return this.byKey.keys()
  }

  /** The document's state of `key` is now `value`: requirements up to it are met. */
  advance(key: K, value: number): void {
    const heap = this.byKey.get(key)
    if (heap === undefined) return
    heap.popUpTo(value, (update) => {
      if (update.gone) return
      if (--update.unmet === 0) this.ready.push(update)
    })
    if (heap.size === 0) this.byKey.delete(key)
  }

  /** Takes the next update whose requirements are all met (it leaves the room), or undefined. */
  next(): WaitingUpdate<C> | undefined {
    if (this.readyHead >= this.ready.length) {
      if (this.ready.length > 0) this.ready = []
      this.readyHead = 0
      return undefined
    }
    const update = this.ready[this.readyHead++]
    this.leave(update)
    this.released++
    this.budget?.countReleased(1)
    return update
  }

  /** Drops every waiting update (the document was rebuilt or replaced). */
  clear(): void {
    for (const heap of this.byKey.values())
      heap.popUpTo(Infinity, (update) => {
        if (!update.gone) this.leave(update)
      })
    this.byKey.clear()
    for (let i = this.readyHead; i < this.ready.length; i++) if (!this.ready[i].gone) this.leave(this.ready[i])
    this.ready = []
    this.readyHead = 0
  }

  private leave(update: WaitingUpdate<C>): void {
    update.gone = true
    const size = update.bytes.length
    this.count--
    this.heldBytes -= size
    const holding = this.holdings.get(update.key)
    if (holding !== undefined) {
      holding.updates--
      holding.bytes -= size
      if (holding.updates <= 0) this.holdings.delete(update.key)
    }
    this.budget?.give(update.key, 1, size)
  }
}
