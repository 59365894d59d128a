/**
 * Documents behind the replica interface: Yjs (`YjsReplica`, type `yjs`) and
 * Automerge (`AutomergeReplica`, type `automerge`), with the input guards
 * that reject malformed updates and snapshots before the libraries see them.
 */
// Automerge's full entry, as crdt/index.ts: its wasm loaded at once for replicas used without a store.
import '@automerge/automerge'
export { YjsReplica, YjsRemoteOrigin, isYjsRemoteOrigin, yjsReplicaFactory } from './yjs-replica.ts'
export { validateYjsUpdate, validateYjsStateVector, checkYjsDeltaSize, type YjsUpdateSummary } from './yjs-guard.ts'
export { checkDocumentDelta } from './delta-size.ts'
export { checkAutomergeSize, type DecodedSize } from './automerge-size.ts'
export { documentValue, kindOf, type ObservedKind } from './yjs-view.ts'
export {
  DEFAULT_DOCUMENT_LIMITS,
  resolveLimits,
  trustedLimits,
  type DocumentLimits,
  type YjsReplicaOptions,
  type YjsTopLevelKind,
  type AutomergeReplicaOptions,
} from './options.ts'
export { encodeDocumentSnapshot, decodeDocumentSnapshot, DocumentKind, SNAPSHOT_FORMAT_VERSION, type DocumentSnapshot } from './snapshot-envelope.ts'
export {
  AutomergeReplica,
  automergeReplicaFactory,
  encodeAutomergeVersion,
  decodeAutomergeVersion,
  decodeAutomergeHeads,
  plainValue,
  type AutomergeVersion,
} from './automerge-replica.ts'
export { ChangeClock } from './automerge-clock.ts'
export { splitAutomergeChunks, AutomergeChunkType, type AutomergeChunk } from './automerge-guard.ts'
export { mergeYjsDeltas, mergeAutomergeDeltas } from './merge-deltas.ts'
export { WaitingBudget, WaitingRoom, DEFAULT_WAITING_BUDGET, defaultWaitingKey, type WaitingStats, type WaitingBudgetLimits } from './waiting-room.ts'
export {
  setAutomergeReloader,
  setAutomergeLoader,
  ensureAutomerge,
  recoverAutomerge,
  automergeRecoveries,
  automergeGeneration,
  type AutomergeReloader,
  type AutomergeLoader,
} from './automerge-runtime.ts'
