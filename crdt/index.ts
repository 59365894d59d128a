/**
 * crdt/: pure, synchronous replicated types. The public names: base
 * utilities (errors, codec, clock, emitter), the replica interface and
 * registry, the causal core, the native CRDTs and the documents.
 */
export * from './errors.ts'
export { Encoder, Decoder, decodeGuarded, bytesEqual } from './codec.ts'
export { HybridClock, HLC_ZERO, compareHlc, compareStamped, readHlc, writeHlc, type HlcTimestamp, type PhysicalClock } from './hlc.ts'
export { Emitter, type Unsubscribe } from './emitter.ts'
export {
  replicaId, type Replica, type ReplicaId, type ReplicaType, type ReplicaOptions, type ReplicaFactory, type ReplicaEvents, type ChangeEvent,
} from './replica.ts'
export { createReplica, replicaFactories, isRegisteredType, deltaMerger, mergeDeltas } from './registry.ts'
export * from './causal/index.ts'
export * from './types/index.ts'
export * from './documents/index.ts'
