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
import type { Dot } from '../causal/dot.ts'
import {
  cloneStore,
  emptyLike,
  isEmptyStore,
  joinStoreInto,
  restrictStore,
  storeDots,
  storeWithin,
  type JoinTrack,
  type DotStore,
} from '../causal/dot-store.ts'
import { Emitter, type Unsubscribe } from '../emitter.ts'
import { ConcordError, ErrorCodes, withArticle } from '../errors.ts'
import { HybridClock } from '../hlc.ts'
import type { ChangeEvent, PreparedDelta, PrepareOptions, Replica, ReplicaEvents, ReplicaOptions, UndoRecord } from '../replica.ts'
import type { AgentId } from '../agent-id.ts'
import { DotAllocator } from './dot-allocator.ts'
import type { NativeType } from '../catalog.ts'
import type { Json } from './json.ts'
import { nativeTypes, parseFieldKey, wrapField, type NativeTypeDef } from './native-type.ts'
import { decodeState, decodeVersion, encodeState, encodeVersion, type CausalState } from './state-codec.ts'

/** Joins `b` into a copy of `a` (pure: neither input changes). */
export function joinStates<S extends DotStore>(a: CausalState<S>, b: CausalState<S>): CausalState<S> {
  const store = cloneStore(a.store)
  const ctx = a.ctx.clone()
  joinStoreInto(store, ctx, b.store, b.ctx)
  ctx.join(b.ctx)
  return { store, ctx }
}

/** Keeps a replica's index of live dots in step with the joins into its store. */
class LiveTrack implements JoinTrack {
  constructor(private readonly live: CausalContext) {}

  added(d: Dot): void {
    this.live.add(d)
  }

  removed(d: Dot): void {
    this.live.delete(d)
  }
}

/** A native delta-state replica. Each type's class (in the type's file) passes its definition and adds the type's mutators. */
export class CausalReplica<S extends DotStore = DotStore> implements Replica {
  readonly type: NativeType
  readonly agentId: AgentId
  readonly events = new Emitter<ReplicaEvents>()

  /** Listens to `change` events (local mutations and remote deltas that changed the state); returns an unsubscribe. */
  on(event: 'change', listener: (event: ChangeEvent) => void): Unsubscribe {
    return this.events.on(event, listener)
  }
  /** The agent's clock (LWW timestamps). */
  readonly clock: HybridClock
  protected readonly def: NativeTypeDef<S>
  private store: S
  private ctx: CausalContext
  /** The dots in the store, kept in step by every join. */
  private live: CausalContext
  /** Keeps {@link live} in step with a join (a class, not two closures per replica). */
  private track: LiveTrack
  /** Open undo records (see {@link recordUndo}); each join while one is open is journaled. Made on first use. */
  private undoRecords: Set<NativeUndoRecord> | undefined
  /** See {@link Replica.guard}. */
  guard: (() => void) | undefined
  /** Highest own dot counter used before a reset that could not keep it seen: never handed out again. */
  private dotFloor = 0

  constructor(def: NativeTypeDef<S>, options: ReplicaOptions) {
    if (nativeTypes.get(def.tag) !== def) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `native type "${def.tag}" is not in the catalog (crdt/catalog.ts not loaded, or the type not listed)`)
    }
    const type = def.tag as NativeType
    this.type = type
    this.def = def
    this.agentId = options.agentId
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
    this.track = new LiveTrack(this.live)
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

  /**
   * `deltaSince(version())` is null in every state: with `seen` the whole
   * context and `dead = ctx \ live`, `ctx \ seen` is empty and so is
   * `R = (ctx \ dead) ∩ ctx \ live = (ctx ∩ live) \ live` (see the module
   * comment); test/crdt/native-laws.test.ts checks it.
   */
  readonly ownVersionComplete = true

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
    return this.joinRemote(this.decodeDelta(delta), delta, origin) !== null
  }

  /** Decodes and checks a remote delta (see {@link Replica.prepareDelta}); the decoded state is what `apply` joins. */
  prepareDelta(delta: Uint8Array, _options?: PrepareOptions): PreparedDelta {
    const state = this.decodeDelta(delta)
    let applied = false
    const replica = this
    // A method, not an arrow: under tsx (esbuild keepNames) an arrow named by its property costs a defineProperty per call.
    return {
      apply(origin) {
        if (applied) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a prepared delta is applied once')
        applied = true
        return replica.joinRemote(state, delta, origin)
      },
    }
  }

  /** A remote delta's state, checked (its codec bounds every count by the bytes). */
  private decodeDelta(delta: Uint8Array): CausalState<S> {
    const { state } = decodeState(delta, this.type)
    this.def.validateDelta?.(state as CausalState<S>)
    return state as CausalState<S>
  }

  /** Joins a decoded remote delta; `delta` (its bytes) when the state changed, else null. */
  private joinRemote(state: CausalState<S>, delta: Uint8Array, origin: unknown): Uint8Array | null {
    this.def.observe?.(state.store, this.clock)
    if (!this.join(state)) return null
    this.events.emit('change', { delta, local: false, origin })
    return delta
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
    this.guard?.()
    const delta = this.def.restore(this.store, (past as CausalReplica<S>).store, this.allocator(), this.clock)
    return delta ? this.commit(delta) : null
  }

  /** A dot allocator for a local mutation. */
  protected allocator(): DotAllocator {
    return new DotAllocator(this.agentId, this.ctx, this.dotFloor)
  }

  /** Whether a delta that only removes the dots of `ctx` is valid for this type. */
  private acceptsRemoval(ctx: CausalContext): boolean {
    try {
      this.def.validateDelta?.({ store: this.def.empty(), ctx })
      return true
    } catch {
      return false
    }
  }

  /** The nested store at `path` (field keys from the root), or an empty store of the field's type. */
  storeAt(path: readonly string[]): DotStore {
    let store: DotStore | undefined = this.store
    let def: NativeTypeDef = this.def as unknown as NativeTypeDef
    for (const key of path) {
      const field = parseFieldKey(key)
      if (!field || !def.holdsFields) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `bad field path`)
      def = nativeTypes.of(field.tag)
      store = store?.kind === 'map' ? store.entries.get(key) : undefined
    }
    return store ?? def.empty()
  }

  /**
   * Runs a mutator on the store at `path` and commits its delta, wrapped in
   * the maps above it. Returns the committed delta bytes (the internal path:
   * mutators return whether they changed anything), or null when the
   * mutator had nothing to do.
   */
  mutateAt<T extends DotStore>(path: readonly string[], mutator: (store: T, alloc: DotAllocator) => CausalState | null): Uint8Array | null {
    this.guard?.()
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

  /**
   * Records every change from now on so that it can be taken back exactly:
   * each join journals the dots it adds to the context and the entries it
   * may remove from the store (the store's dots the delta's context covers,
   * found through the map indexes), so the cost is that of the changes.
   */
  recordUndo(): UndoRecord {
    const record = new NativeUndoRecord(this)
    ;(this.undoRecords ??= new Set()).add(record)
    return record
  }

  /** @internal takes back journaled steps, newest first, and ends `record`. */
  undoSteps(record: NativeUndoRecord, steps: readonly UndoStep[]): void {
    // A record that a reset ended has nothing left to undo.
    if (!this.undoRecords?.delete(record) || steps.length === 0) return
    for (let i = steps.length - 1; i >= 0; i--) {
      const { added, removed } = steps[i]
      if (!added.isEmpty) {
        joinStoreInto(this.store, this.ctx, emptyLike(this.store), added, this.track)
        this.ctx.remove(added)
      }
      if (!isEmptyStore(removed)) {
        const dots = CausalContext.of(storeDots(removed))
        joinStoreInto(this.store, this.ctx.subtract(dots), removed, dots, this.track)
      }
    }
    this.events.emit('change', { delta: this.snapshot(), local: false, rollback: true })
  }

  /** @internal ends `record` without undoing. */
  releaseUndo(record: NativeUndoRecord): void {
    this.undoRecords?.delete(record)
  }

  /**
   * Replaces the state with `snapshot`'s (see {@link Replica.reset}). The
   * dots this replica made stay in the context (seen, no longer held): they
   * are never handed out again, and a peer that received a change taken
   * back here is told to remove it.
   */
  reset(snapshot: Uint8Array): void {
    const { state } = decodeState(snapshot, this.type)
    this.def.validateDelta?.(state as CausalState<S>)
    const own = this.ctx.get(this.agentId)
    this.store = state.store as S
    this.ctx = state.ctx
    if (own) {
      const taken = new CausalContext(new Map([[this.agentId, own]])).subtract(this.ctx)
      if (this.acceptsRemoval(taken)) this.ctx.join(taken)
      // A grow-only set cannot say its dots went away: it only never hands them out again.
      else this.dotFloor = Math.max(this.dotFloor, own.max)
    }
    this.live = CausalContext.of(storeDots(this.store))
    this.track = new LiveTrack(this.live)
    this.def.observe?.(this.store, this.clock)
    this.undoRecords?.clear()
    this.events.emit('change', { delta: this.snapshot(), local: false, rollback: true })
  }

  /** Joins a delta into the state; true when anything changed. */
  private join(delta: CausalState<S>): boolean {
    if (this.undoRecords !== undefined && this.undoRecords.size > 0) {
      const step: UndoStep = { added: delta.ctx.subtract(this.ctx), removed: storeWithin(this.store, delta.ctx) }
      for (const record of this.undoRecords) record.steps.push(step)
    }
    const grows = !delta.ctx.isSubsetOf(this.ctx)
    const changed = joinStoreInto(this.store, this.ctx, delta.store, delta.ctx, this.track)
    if (grows) this.ctx.join(delta.ctx)
    return grows || changed
  }
}

/** What one join changed, enough to take it back. */
interface UndoStep {
  /** Dots the join added to the context (it may have added them to the store). */
  readonly added: CausalContext
  /** The entries of the store the join may have removed (every one whose dot its context covers). */
  readonly removed: DotStore
}

/** An undo record of a native replica (see {@link CausalReplica.recordUndo}). */
class NativeUndoRecord implements UndoRecord {
  readonly steps: UndoStep[] = []
  private done = false

  constructor(private readonly replica: CausalReplica) {}

  undo(): boolean {
    if (!this.done) {
      this.done = true
      this.replica.undoSteps(this, this.steps)
    }
    return true
  }

  release(): void {
    if (this.done) return
    this.done = true
    this.replica.releaseUndo(this)
  }
}
