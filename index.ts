/**
 * Concord: replicated state for many agents.
 *
 * ```ts
 * import { createPeer } from 'concord-crdt'
 * const peer = await createPeer({ agentId: 'planner', dir: './state/planner' })
 * ```
 *
 * This entry is `createPeer()` and everything its API takes or returns (as
 * types where users never construct them). The layers beneath have entries
 * of their own: `concord-crdt/crdt`, `concord-crdt/persistence`, `concord-crdt/sync`,
 * `concord-crdt/transports` (and `/memory`, `/websocket`, `/libp2p`) and
 * `concord-crdt/testing` (the conformance suites).
 */
export { createPeer, Peer, FlushTimeoutError } from './peer/index.ts'
export type {
  PeerOptions,
  AuthOptions,
  AccessFunction,
  CredentialCheck,
  SyncTuning,
  ListenOptions,
  ConnectOptions,
  ReconnectingEvent,
  FlushOptions,
  FlushProgress,
  PeerEvents,
  PeerStats,
  PeerStatus,
  PeerSessionStatus,
} from './peer/index.ts'
export type { Libp2pListenOptions, Libp2pListening, PeerLibp2pOptions, PeerGossipOptions, GossipStats } from './peer/index.ts'
export type { YWebsocketOptions, YWebsocketStats, YWebsocketBridgeStats, AwarenessLimits } from './peer/index.ts'
export {
  ConcordError,
  DecodeError,
  TypeMismatchError,
  ErrorCodes,
  isConcordError,
  type ErrorCode,
} from './crdt/errors.ts'
export type { Emitter, Unsubscribe } from './crdt/emitter.ts'
export type { HybridClock, HlcTimestamp } from './crdt/hlc.ts'
export type { Replica, ReplicaType, ReplicaOptions, ReplicaEvents, ReplicaFactory, ChangeEvent, LocalRun, UndoRecord } from './crdt/replica.ts'
export type { AgentId } from './crdt/agent-id.ts'
export type { Json } from './crdt/types/json.ts'
export {
  GCounterReplica,
  PNCounterReplica,
  GSetReplica,
  ORSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  EWFlagReplica,
  ORMapReplica,
} from './crdt/types/index.ts'
export type { GCounterView, PNCounterView, GSetView, ORSetView, EWFlagView, MVRegisterView, LWWRegisterView, ORMapView } from './crdt/types/index.ts'
export type { NativeType } from './crdt/catalog.ts'
export { YjsReplica } from './crdt/documents/yjs-replica.ts'
export { AutomergeReplica } from './crdt/documents/automerge-replica.ts'
export { DEFAULT_DOCUMENT_LIMITS } from './crdt/documents/options.ts'
export type { DocumentLimits, YjsReplicaOptions, YjsTopLevelKind, AutomergeReplicaOptions } from './crdt/documents/options.ts'
export { WaitingBudget, type WaitingStats, type WaitingBudgetLimits } from './crdt/documents/waiting-room.ts'
export type {
  Store,
  StoreEvents,
  HistoryEntry,
  DurabilityStatus,
  NameInfo,
  NamePage,
  NamePageOptions,
  VerifyReport,
  GcReport,
  ApplyResult,
  Loss,
} from './persistence/store.ts'
export type { RepairReport } from './persistence/history/repair.ts'
export type { StoreOptions, NameOptions, Durability, Retention, CheckpointPolicy, Schema, Migration, ReplicaCreator } from './persistence/options.ts'
export type { Storage, StorageKey, StorageEntry, StorageOperation, RangeOptions, WriteOptions, SignalOptions } from './persistence/storage/storage.ts'
export type {
  SyncSession,
  SessionStats,
  SessionEvents,
  SessionState,
  SessionOptions,
  RefuseReason,
  NameFilter,
  Access,
  AdmissionStats,
} from './sync/index.ts'
export type { Transport, TransportEvents, Connection, ConnectionEvents, AbortOptions } from './transports/transport.ts'
export type { WebSocketListenOptions } from './transports/websocket/index.ts'
export type {
  Libp2pTransport,
  Libp2pTransportOptions,
  Libp2pTransportStats,
  Libp2pListenAddress,
  Libp2pLimits,
  RedialOptions,
  PubSubChannel,
  PubSubHandler,
} from './transports/libp2p/index.ts'
