/**
 * crdt/ (`concord-crdt/crdt`): the replicated types, pure and synchronous, with
 * no store and no network. The public names: typed errors, the emitter and
 * hybrid logical clock the replicas use, the replica interface and registry,
 * the native delta-state CRDTs (and the views an ORMap hands out for its
 * fields), and the Yjs and Automerge documents with their input guards.
 * The causal core, the state codecs and the per-type operations stay
 * internal.
 */
export { ConcordError, DecodeError, TypeMismatchError, ErrorCodes, isConcordError, type ErrorCode } from './errors.ts'
export { bytesEqual } from './codec.ts'
export { HybridClock, HLC_ZERO, compareHlc, type HlcTimestamp, type PhysicalClock } from './hlc.ts'
export { Emitter, type Unsubscribe } from './emitter.ts'
export {
  replicaId,
  type Replica,
  type ReplicaId,
  type ReplicaType,
  type ReplicaOptions,
  type ReplicaFactory,
  type ReplicaEvents,
  type ChangeEvent,
  type LocalRun,
  type UndoRecord,
} from './replica.ts'
export { createReplica, replicaFactories, isRegisteredType, deltaMerger, mergeDeltas } from './registry.ts'
export {
  GCounterReplica,
  PNCounterReplica,
  GSetReplica,
  ORSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  EWFlagReplica,
  ORMapReplica,
} from './types/replicas.ts'
export type { GCounterView, PNCounterView, GSetView, ORSetView, EWFlagView, MVRegisterView, LWWRegisterView, ORMapView } from './types/views.ts'
export { NATIVE_TYPES, isNativeType, type NativeType } from './types/store-spec.ts'
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
