/**
 * Concord in a browser (`concord-crdt/browser`): `createPeer()` on IndexedDB,
 * syncing over the browser's WebSocket, with the API of the Node entry
 * where it applies (typed openers, `transact`, `flush`, `history`, `at`,
 * `revert`, `names`, events, stats; `connect`, not `listen`).
 *
 * ```ts
 * import { createPeer } from 'concord-crdt/browser'
 * const peer = await createPeer({ agentId: 'ana-laptop' })       // IndexedDB database "concord:ana-laptop"
 * await peer.connect('wss://hub.example:4400/concord', { token })
 * const notes = await peer.yjs('notes')
 * ```
 *
 * Its import graph holds no Node built-in (test/browser/bundle.test.ts
 * builds it with esbuild for the browser and fails on one); the package's
 * `browser` field swaps the few Node-only modules below the peer (digests,
 * archive files, the LevelDB opener, Automerge's wasm loading) for
 * browser ones.
 */
export { createPeer, BrowserPeer } from './peer/browser.ts'
export type { BrowserPeerOptions, BrowserConnectOptions, AutomergeOptions, AutomergeWasmSource } from './peer/browser.ts'
export type { PeerCore, PeerEvents, PeerStats } from './peer/peer-core.ts'
export type { PeerStatus, PeerSessionStatus } from './peer/status.ts'
export type { ReconnectingEvent, DialOptions } from './peer/dialer.ts'
export { FlushTimeoutError, type FlushOptions, type FlushProgress } from './peer/flush.ts'
export type { AuthOptions, AccessFunction, CredentialCheck, SyncTuning } from './peer/options.ts'
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
export type { Replica, ReplicaType, ReplicaOptions, ReplicaEvents, ReplicaFactory, ChangeEvent, LocalRun } from './crdt/replica.ts'
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
export { YjsReplica } from './crdt/documents/yjs-replica.ts'
export { AutomergeReplica } from './crdt/documents/automerge-replica.ts'
export type { DocumentLimits, YjsReplicaOptions, YjsTopLevelKind, AutomergeReplicaOptions } from './crdt/documents/options.ts'
export type { Store, StoreEvents, HistoryEntry, NameInfo, VerifyReport, GcReport, ApplyResult } from './persistence/store.ts'
export type { StoreOptions, NameOptions, Durability, Retention, CheckpointPolicy, Schema, Migration, ReplicaCreator } from './persistence/options.ts'
export type { Storage, StorageKey, StorageEntry, StorageOperation, RangeOptions, WriteOptions, SignalOptions } from './persistence/storage/storage.ts'
export { openIndexedDbStorage, IndexedDbStorage, INDEXEDDB_PREFIX, type IndexedDbStorageOptions } from './persistence/browser/indexeddb-storage.ts'
export type { SyncSession, SessionStats, SessionEvents, SessionState, RefuseReason, NameFilter, Access, AdmissionStats } from './sync/index.ts'
export type { Transport, TransportEvents, Connection, ConnectionEvents, AbortOptions } from './transports/transport.ts'
export {
  BrowserWebSocketTransport,
  type BrowserWebSocketTransportOptions,
  type WebSocketLike,
  type WebSocketLikeConstructor,
} from './transports/browser-websocket/index.ts'
