/**
 * The default replica creator of a store: the crdt registry (every native
 * type and both document types).
 */
import { createReplica } from '../crdt/registry.ts'
import type { ReplicaCreator } from './options.ts'

/** Creates a replica of any registered type. */
export const defaultCreateReplica: ReplicaCreator = createReplica
