/**
 * Concord: replicated state for many agents.
 *
 * ```ts
 * import { createPeer } from 'concord'
 * const peer = await createPeer({ id: 'planner', dir: './state/planner' })
 * ```
 *
 * The public API is `createPeer()` and what it returns; the layers beneath
 * (crdt/, persistence/, sync/, transports/) are exported for embedding and
 * for custom transports and storage.
 */
export { createPeer, Peer, FlushTimeoutError } from './peer/index.ts'
export type {
  PeerOptions, AuthOptions, AccessFunction, CredentialCheck, ListenOptions, ConnectOptions, ReconnectingEvent, FlushOptions, FlushProgress, PeerEvents, PeerStats,
} from './peer/index.ts'
export type { Libp2pListenOptions, Libp2pListening, PeerLibp2pOptions, PeerGossipOptions, GossipStats } from './peer/index.ts'
export {
  ConcordError, DecodeError, TypeMismatchError, ErrorCodes, isConcordError, type ErrorCode,
} from './crdt/errors.ts'
export type { Replica, ReplicaType, ChangeEvent } from './crdt/replica.ts'
export type { Json } from './crdt/types/json.ts'
export {
  GCounterReplica, PNCounterReplica, GSetReplica, ORSetReplica, LWWRegisterReplica, MVRegisterReplica, EWFlagReplica, ORMapReplica,
} from './crdt/types/replicas.ts'
export { YjsReplica } from './crdt/documents/yjs-replica.ts'
export { AutomergeReplica } from './crdt/documents/automerge-replica.ts'
export type { Durability, Retention, CheckpointPolicy, Schema, Migration } from './persistence/options.ts'
export type { HistoryEntry, NameInfo } from './persistence/store.ts'
