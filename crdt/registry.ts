/**
 * The replica registry: one {@link ReplicaFactory} per type tag (the
 * catalog's, crdt/catalog.ts), and {@link createReplica} to create or load a
 * replica of any registered type. persistence/ and sync/ create replicas
 * only through it, by tag.
 */
import { catalogFactories } from './catalog.ts'
import { ConcordError, ErrorCodes } from './errors.ts'
import type { Replica, ReplicaFactory, ReplicaOptions, ReplicaType } from './replica.ts'

/** The factories, by type tag: every entry of the catalog. */
export const replicaFactories: Partial<Record<ReplicaType, ReplicaFactory>> = catalogFactories

/** Whether a factory is registered for `type`. */
export function isRegisteredType(type: string): type is ReplicaType {
  return Object.hasOwn(replicaFactories, type)
}

/**
 * Creates a replica of `type` (empty, or loaded from `options.snapshot`).
 * Throws `CONCORD_INVALID_ARGUMENT` for an unknown type and DecodeError for a
 * malformed snapshot.
 */
export function createReplica(type: ReplicaType, options: ReplicaOptions): Replica {
  const factory = isRegisteredType(type) ? replicaFactories[type] : undefined
  if (!factory) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `unknown replica type "${String(type)}"`)
  return factory.create(options)
}

/**
 * The merge of `type`'s deltas into one (its factory's `mergeDeltas`), or
 * undefined when the type has none or is unknown.
 */
export function deltaMerger(type: ReplicaType): ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined {
  const factory = isRegisteredType(type) ? replicaFactories[type] : undefined
  const merge = factory?.mergeDeltas
  return merge === undefined ? undefined : (deltas) => merge.call(factory, deltas)
}

/**
 * Merges deltas of `type` into one delta that applying gives the same state
 * as applying them in order. Throws `CONCORD_INVALID_ARGUMENT` for a type
 * without a merge (or unknown), DecodeError for a malformed delta.
 */
export function mergeDeltas(type: ReplicaType, deltas: readonly Uint8Array[]): Uint8Array {
  const merge = deltaMerger(type)
  if (!merge) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `replica type "${String(type)}" has no delta merge`)
  return merge(deltas)
}
