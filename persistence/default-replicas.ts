/**
 * The default replica creator of a store: the crdt registry.
 * (Until the native registry lands, only the document replicas are wired.)
 */
import { automergeReplicaFactory } from '../crdt/documents/automerge-replica.ts'
import { yjsReplicaFactory } from '../crdt/documents/yjs-replica.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { ReplicaCreator } from './options.ts'

/** Creates a replica of any registered type. */
export const defaultCreateReplica: ReplicaCreator = (type, options) => {
  if (type === 'yjs') return yjsReplicaFactory.create(options)
  if (type === 'automerge') return automergeReplicaFactory.create(options)
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `no replica factory for type "${type}"`)
}
