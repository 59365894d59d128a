/**
 * The base of every typed handle on a native CRDT at a path inside a
 * replica (a view): the top-level replicas use their type's view at the
 * empty path, and an ORMap hands them out for its nested fields
 * (`map.counter('done').increment()`). Every mutation becomes one delta of
 * the replica that owns the handle (so a nested change is a delta of the
 * whole map) and returns true, or false when there was nothing to do; the
 * delta itself goes to the replica's `change` listeners. Each type's view
 * is in its own file.
 */
import type { DotStore } from '../causal/dot-store.ts'
import type { CausalReplica } from './causal-replica.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { CausalState } from './state-codec.ts'

/** Common part of every handle: the owning replica and the path of field keys. */
export abstract class View {
  constructor(
    /** The replica whose state holds this CRDT. */
    protected readonly owner: CausalReplica,
    /** Field keys from the owner's root to this CRDT (empty at the top level). */
    readonly path: readonly string[],
  ) {}

  /** Commits the mutator's delta at this handle's path; false when it had nothing to do. */
  protected change<T extends DotStore>(mutator: (store: T, alloc: DotAllocator) => CausalState | null): boolean {
    return this.owner.mutateAt<T>(this.path, mutator) !== null
  }

  /** The store at this handle's path (read only). */
  protected store<T extends DotStore>(): T {
    return this.owner.storeAt(this.path) as T
  }
}
