/**
 * sync/ (`concord-crdt/sync`): the Concord sync protocol, pure over bytes (wire
 * grammar in sync/PROTOCOL.md): the session, the host interface a store
 * implements for it, and the message codec. Chunking stays internal.
 */
/** The agent id brand, from crdt/ (one identity through every layer). */
export { agentId, type AgentId } from '../crdt/agent-id.ts'
export {
  FRAME_FORMAT,
  PROTOCOL_VERSION,
  MIN_PROTOCOL_VERSION,
  MessageType,
  KNOWN_TYPES,
  WIRE_LIMITS,
  encodeMessage,
  decodeMessage,
  isHandshakeMessage,
  isCommitMessage,
  isChunkMessage,
} from './messages.ts'
export type {
  RefuseReason,
  Message,
  DecodedMessage,
  HelloMessage,
  HelloOkMessage,
  RefuseMessage,
  VersionsMessage,
  VersionEntry,
  DeltaEntry,
  DeltaMessage,
  TransactionMessage,
  AckMessage,
  ChunkMessage,
  DoneMessage,
  RequestMessage,
  RejectMessage,
  UnknownMessage,
  AuthMessage,
  PresenceMessage,
} from './messages.ts'
export { PRESENCE_EXTENSION, PRESENCE_FORMAT, PRESENCE_LIMITS, presenceExtension, takesPresence } from './presence.ts'
export type { PresenceEntry } from './presence.ts'
export { provesSecret, secretsEqual, constantTimeEqual, handshakeProof, NONCE_BYTES, PROOF_BYTES, NONCE_EXTENSION } from './credentials.ts'
export type { PresentedCredentials, ProofInput } from './credentials.ts'
export { ALL_NAMES, MAX_NAME_LENGTH, isAllNames, matchesFilter, isValidName } from './names.ts'
export type { NameFilter } from './names.ts'
export { ItemIndex, type ItemSource } from './item-index.ts'
export type { ItemSet } from './reconcile.ts'
export type { SyncHost, Access, HostedName, LocalCommit, HostApplyResult, GroupedCommit, HostRecord, HostRecordRun, MaybePromise } from './host.ts'
export { Admission, DEFAULT_MAX_UNIT_BYTES, isRefusedApply, newAdmissionStats } from './admission.ts'
export type {
  AdmissionHost,
  AdmissionOptions,
  AdmissionStats,
  Admitted,
  CredentialCheck as AdmissionCredentialCheck,
  Opened,
  WriteRefusal,
} from './admission.ts'
export { SyncSession } from './session.ts'
export type { SyncChannel, SessionOptions, SessionStats, SessionEvents, SessionState } from './session.ts'
export { newSessionStats } from './session-types.ts'
export { attachSession } from './attach.ts'
export type { SyncConnection } from './attach.ts'
