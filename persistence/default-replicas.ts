/**
 * The default replica creator and delta merger of a store: the crdt
 * registry (every native type and both document types).
 */
import { createReplica, deltaMerger } from '../crdt/registry.ts'
import type { DeltaMerger, ReplicaCreator } from './options.ts'

/** Creates a replica of any registered type. */
export const defaultCreateReplica: ReplicaCreator = createReplica

/** The registry's merge of each type's deltas. */
export const defaultDeltaMerger: DeltaMerger = deltaMerger
