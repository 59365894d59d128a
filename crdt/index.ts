/**
 * crdt/ (`concord-crdt/crdt`): the replicated types, pure and synchronous, with
 * no store and no network. The public names: typed errors, the emitter and
 * hybrid logical clock the replicas use, the replica interface, the catalog
 * of types and the registry,
 * the native delta-state CRDTs (and the views an ORMap hands out for its
 * fields), and the Yjs and Automerge documents with their input guards.
 * The causal core, the state codecs and the per-type operations stay
 * internal.
 */
// Automerge's full entry: this entry's replicas are used without a store, so its wasm is loaded at once
// (a store loads it on first need: crdt/documents/automerge-runtime.ts; in a browser this is the slim entry).
import '@automerge/automerge'
export { ConcordError, DecodeError, TypeMismatchError, ErrorCodes, isConcordError, type ErrorCode } from './errors.ts'
export { bytesEqual } from './codec.ts'
export { HybridClock, HLC_ZERO, compareHlc, type HlcTimestamp, type PhysicalClock } from './hlc.ts'
export { Emitter, type Unsubscribe } from './emitter.ts'
export { agentId, type AgentId } from './agent-id.ts'
export type {
  Replica,
  ReplicaType,
  ReplicaOptions,
  ReplicaFactory,
  ReplicaEvents,
  ChangeEvent,
  LocalRun,
  UndoRecord,
} from './replica.ts'
export { createReplica, replicaFactories, isRegisteredType, deltaMerger, mergeDeltas } from './registry.ts'
export { GCounterReplica, type GCounterView } from './types/gcounter.ts'
export { PNCounterReplica, type PNCounterView } from './types/pncounter.ts'
export { GSetReplica, type GSetView } from './types/gset.ts'
export { ORSetReplica, type ORSetView } from './types/orset.ts'
export { LWWRegisterReplica, type LWWRegisterView } from './types/lww-register.ts'
export { MVRegisterReplica, type MVRegisterView } from './types/mv-register.ts'
export { EWFlagReplica, type EWFlagView } from './types/ewflag.ts'
export { ORMapReplica, type ORMapView } from './types/ormap.ts'
export { NATIVE_TYPES, KNOWN_TYPES, isNativeType, isKnownType, type NativeType, type DocumentType } from './catalog.ts'
export type { Json } from './types/json.ts'
export { YjsReplica, YjsRemoteOrigin, isYjsRemoteOrigin } from './documents/yjs-replica.ts'
export { AutomergeReplica } from './documents/automerge-replica.ts'
export { validateYjsUpdate, validateYjsStateVector, type YjsUpdateSummary } from './documents/yjs-guard.ts'
export { documentValue } from './documents/yjs-view.ts'
export {
  DEFAULT_DOCUMENT_LIMITS,
  type DocumentLimits,
  type YjsReplicaOptions,
  type YjsTopLevelKind,
  type AutomergeReplicaOptions,
} from './documents/options.ts'
