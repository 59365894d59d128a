/**
 * The machinery shared by every native replica: state `(store, context)`,
 * the live-dot index behind `version()`, `deltaSince`, `applyDelta`,
 * `snapshot`, `restore`, and local mutations at a path of map fields.
 *
 * Version and deltaSince (see also state-codec.ts): a version is the
 * context seen plus the "dead" dots (seen, no longer in the store). For a
 * version `(seen, dead)`, `deltaSince` returns
 * - store: the dots of our store outside `seen`;
 * - context: `(ours \ seen) ∪ R`, where `R = (seen \ dead) ∩ ours \ live`
 *   are the dots the holder of the version still has and we removed;
 * or null when both are empty. It is a lattice element below our state, so
 * joining it is always safe, and it carries removals to a replica that
 * holds the removed element. `R` and the new dots are found with range
 * arithmetic and the dot index, so the work is proportional to what
 * changed, not to the state's size.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { cloneStore, isEmptyStore, joinStoreInto, restrictStore, storeDots, type JoinTrack, type Store } from '../causal/dot-store.ts'
import { Emitter, type Unsubscribe } from '../emitter.ts'
import { ConcordError, ErrorCodes, withArticle } from '../errors.ts'
import { HybridClock } from '../hlc.ts'
import type { ChangeEvent, Replica, ReplicaEvents, ReplicaId, ReplicaOptions } from '../replica.ts'
import { DotAllocator } from './dot-allocator.ts'
import type { Json } from './json.ts'
import { TYPE_DEFS, wrapField } from './ormap.ts'
import { decodeState, decodeVersion, encodeState, encodeVersion, type CausalState } from './state-codec.ts'
import { parseFieldKey, type NativeType } from './store-spec.ts'
import type { NativeTypeDef } from './type-def.ts'

/** Joins `b` into a copy of `a` (pure: neither input changes). */
export function joinStates<S extends Store>(a: CausalState<S>, b: CausalState<S>): CausalState<S> {
  const store = cloneStore(a.store)
  const ctx = a.ctx.clone()
  joinStoreInto(store, ctx, b.store, b.ctx)
  ctx.join(b.ctx)
  return { store, ctx }
}

/** A native delta-state replica. Subclasses add the type's mutators. */
export class CausalReplica<S extends Store = Store> implements Replica {
  readonly type: NativeType
  readonly replicaId: ReplicaId
  readonly events = new Emitter<ReplicaEvents>()

  /** Listens to `change` events (local mutations and remote deltas that changed the state); returns an unsubscribe. */
  on(event: 'change', listener: (event: ChangeEvent) => void): Unsubscribe {
    return this.events.on(event, listener)
  }
  /** The agent's clock (LWW timestamps). */
  readonly clock: HybridClock
  protected readonly def: NativeTypeDef<S>
  private store: S
  private readonly ctx: CausalContext
  /** The dots in the store, kept in step by every join. */
  private readonly live: CausalContext
  private readonly track: JoinTrack

  constructor(type: NativeType, options: ReplicaOptions) {
    this.type = type
    this.def = TYPE_DEFS[type] as unknown as NativeTypeDef<S>
    this.replicaId = options.replicaId
    this.clock = options.clock ?? new HybridClock()
    if (options.snapshot !== undefined) {
      const { state } = decodeState(options.snapshot, type)
      this.def.validateDelta?.(state as CausalState<S>)
      this.store = state.store as S
      this.ctx = state.ctx
      this.def.observe?.(this.store, this.clock)
    } else {
      this.store = this.def.empty()
      this.ctx = new CausalContext()
    }
    this.live = CausalContext.of(storeDots(this.store))
    this.track = { added: (d) => this.live.add(d), removed: (d) => this.live.delete(d) }
  }

  /** The current state (read only: do not mutate). */
  get state(): CausalState<S> {
    return { store: this.store, ctx: this.ctx }
  }

  /** The value as plain JSON. */
  value(): Json {
    return this.def.value(this.store)
  }

  /** Encoded version: the context seen and the dots removed since. */
  version(): Uint8Array {
    return encodeVersion(this.type, this.ctx, this.ctx.subtract(this.live))
  }

  /** What a replica at `version` lacks (removals included), or null. Throws DecodeError on a bad version. */
  deltaSince(version: Uint8Array): Uint8Array | null {
    const { seen, dead } = decodeVersion(version, this.type)
    const fresh = this.live.subtract(seen)
    const store = isEmptyStore(this.store) ? this.def.empty() : restrictStore(this.store, seen, fresh)
    const removed = seen.subtract(dead).intersect(this.ctx).subtract(this.live)
    const ctx = this.ctx.subtract(seen)
    ctx.join(removed)
    if (ctx.isEmpty) return null
    return encodeState(this.type, { store, ctx })
  }

  /** Joins a remote delta (or snapshot) atomically; true if the state changed. */
  applyDelta(delta: Uint8Array, origin?: unknown): boolean {
    const { state } = decodeState(delta, this.type)
    this.def.validateDelta?.(state as CausalState<S>)
    this.def.observe?.(state.store as S, this.clock)
    if (!this.join(state as CausalState<S>)) return false
    this.events.emit('change', { delta, local: false, origin })
    return true
  }

  /** The whole state, encoded. */
  snapshot(): Uint8Array {
    return encodeState(this.type, { store: this.store, ctx: this.ctx })
  }

  /** A local change back to `past.value()`; returns its delta, or null when already equal. */
  restore(past: Replica): Uint8Array | null {
    if (!(past instanceof CausalReplica) || past.type !== this.type) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `restore: expected ${withArticle(this.type)} replica`)
    }
    const delta = this.def.restore(this.store, (past as CausalReplica<S>).store, this.allocator(), this.clock)
    return delta ? this.commit(delta) : null
  }

  /** A dot allocator for a local mutation. */
  protected allocator(): DotAllocator {
    return new DotAllocator(this.replicaId, this.ctx)
  }

  /** The nested store at `path` (field keys from the root), or an empty store of the field's type. */
  storeAt(path: readonly string[]): Store {
    let store: Store | undefined = this.store
    let tag: NativeType = this.type
    for (const key of path) {
      const field = parseFieldKey(key)
      if (!field || tag !== 'ormap') throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `bad field path`)
      tag = field.tag
      store = store?.kind === 'map' ? store.entries.get(key) : undefined
    }
    return store ?? TYPE_DEFS[tag].empty()
  }

  /**
   * Runs a mutator on the store at `path` and commits its delta, wrapped in
   * the maps above it. Returns the committed delta bytes, or null when the
   * mutator had nothing to do.
   */
  mutateAt<T extends Store>(path: readonly string[], mutator: (store: T, alloc: DotAllocator) => CausalState | null): Uint8Array | null {
    const delta = mutator(this.storeAt(path) as T, this.allocator())
    if (!delta) return null
    let wrapped: CausalState = delta
    for (let i = path.length - 1; i >= 0; i--) wrapped = wrapField(path[i], wrapped)
    return this.commit(wrapped as CausalState<S>)
  }

  /** Joins a local delta and emits it. */
  private commit(delta: CausalState<S>): Uint8Array {
    const bytes = encodeState(this.type, delta)
    this.join(delta)
    this.events.emit('change', { delta: bytes, local: true })
    return bytes
  }

  /** Joins a delta into the state; true when anything changed. */
  private join(delta: CausalState<S>): boolean {
    const grows = !delta.ctx.isSubsetOf(this.ctx)
    const changed = joinStoreInto(this.store, this.ctx, delta.store, delta.ctx, this.track)
    if (grows) this.ctx.join(delta.ctx)
    return grows || changed
  }
}
