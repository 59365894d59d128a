/**
 * Wire messages of the Concord sync protocol and their codecs. One frame is
 * one message: `[frame format = 1][message type][payload]` (see
 * `sync/PROTOCOL.md` for the byte layouts). Pure: Uint8Array only.
 *
 * Decoding validates everything (lengths, counts, names, type tags) and
 * throws {@link DecodeError} on bad input; an unknown message type decodes to
 * an {@link UnknownMessage} so newer peers can add messages (forward
 * compatibility).
 *
 * This module is the envelope and the dispatch on the type byte, and the one
 * place the rest of the code imports messages from; each group's layouts and
 * bound checks are in sync/messages/: envelope.ts (format byte, versions,
 * type bytes), fields.ts (limits and shared fields), handshake.ts (HELLO,
 * HELLO-OK, REFUSE, AUTH), versions.ts (VERSIONS, REQUEST, DONE, WANT),
 * commits.ts (DELTA, TRANSACTION, PROVENANCE, ACK, REJECT), chunk.ts and
 * presence.ts; RANGES is sync/reconcile-codec.ts's.
 */
import { Encoder, decodeGuarded, type Decoder } from '../crdt/codec.ts'
import { readRanges, writeRanges, type RangesMessage } from './reconcile-codec.ts'
import { FRAME_FORMAT, MessageType } from './messages/envelope.ts'
import { readChunk, writeChunk, type ChunkMessage } from './messages/chunk.ts'
import {
  readAck,
  readDelta,
  readProvenance,
  readReject,
  readTransaction,
  writeAck,
  writeDelta,
  writeProvenance,
  writeReject,
  writeTransaction,
  type AckMessage,
  type DeltaMessage,
  type ProvenanceMessage,
  type RejectMessage,
  type TransactionMessage,
} from './messages/commits.ts'
import {
  readAuth,
  readHello,
  readHelloOk,
  readRefuse,
  writeAuth,
  writeHello,
  writeHelloOk,
  writeRefuse,
  type AuthMessage,
  type HelloMessage,
  type HelloOkMessage,
  type RefuseMessage,
} from './messages/handshake.ts'
import { readPresence, writePresence, type PresenceMessage } from './messages/presence.ts'
import {
  readDone,
  readVersions,
  readWant,
  writeDone,
  writeRequest,
  writeVersions,
  writeWant,
  type DoneMessage,
  type RequestMessage,
  type VersionsMessage,
  type WantMessage,
} from './messages/versions.ts'

export type { RangesMessage } from './reconcile-codec.ts'
export { FRAME_FORMAT, MIN_PROTOCOL_VERSION, MessageType, PROTOCOL_VERSION } from './messages/envelope.ts'
export { WIRE_LIMITS } from './messages/fields.ts'
export type { AuthMessage, HelloMessage, HelloOkMessage, RefuseMessage, RefuseReason } from './messages/handshake.ts'
export type { DoneMessage, RequestMessage, VersionEntry, VersionsMessage, WantMessage } from './messages/versions.ts'
export type { AckMessage, DeltaEntry, DeltaMessage, ProvenanceMessage, RejectMessage, TransactionMessage } from './messages/commits.ts'
export type { ChunkMessage } from './messages/chunk.ts'
export type { PresenceMessage } from './messages/presence.ts'

/** Every replica type tag a peer of this version knows: the catalog's (crdt/catalog.ts). */
export { KNOWN_TYPES } from '../crdt/catalog.ts'

/** A message type this version does not know: ignored. */
export interface UnknownMessage {
  readonly type: 'unknown'
  readonly code: number
}

/** Every message. */
export type Message =
  | HelloMessage
  | HelloOkMessage
  | RefuseMessage
  | VersionsMessage
  | DeltaMessage
  | TransactionMessage
  | AckMessage
  | ChunkMessage
  | DoneMessage
  | RequestMessage
  | RejectMessage
  | AuthMessage
  | PresenceMessage
  | ProvenanceMessage
  | RangesMessage
  | WantMessage

/** A decoded frame: a known message or an unknown one. */
export type DecodedMessage = Message | UnknownMessage

/** True for the handshake messages. */
export function isHandshakeMessage(m: DecodedMessage): m is HelloMessage | HelloOkMessage | RefuseMessage | AuthMessage {
  return m.type === 'hello' || m.type === 'hello-ok' || m.type === 'refuse' || m.type === 'auth'
}

/** True for messages that carry a commit (a sequence number and deltas). */
export function isCommitMessage(m: DecodedMessage): m is DeltaMessage | TransactionMessage {
  return m.type === 'delta' || m.type === 'transaction'
}

/** True for a chunk. */
export function isChunkMessage(m: DecodedMessage): m is ChunkMessage {
  return m.type === 'chunk'
}

/** Writes one message (envelope included) into `encoder`. */
export function writeMessage(encoder: Encoder, message: Message): void {
  encoder.writeUint8(FRAME_FORMAT)
  switch (message.type) {
    case 'hello':
      return writeHello(encoder, message)
    case 'hello-ok':
      return writeHelloOk(encoder, message)
    case 'refuse':
      return writeRefuse(encoder, message)
    case 'versions':
      return writeVersions(encoder, message)
    case 'delta':
      return writeDelta(encoder, message)
    case 'transaction':
      return writeTransaction(encoder, message)
    case 'ack':
      return writeAck(encoder, message)
    case 'chunk':
      return writeChunk(encoder, message)
    case 'done':
      return writeDone(encoder, message)
    case 'request':
      return writeRequest(encoder)
    case 'reject':
      return writeReject(encoder, message)
    case 'auth':
      return writeAuth(encoder, message)
    case 'presence':
      return writePresence(encoder, message)
    case 'provenance':
      return writeProvenance(encoder, message)
    case 'ranges':
      encoder.writeUint8(MessageType.ranges)
      writeRanges(encoder, message)
      return
    case 'want':
      return writeWant(encoder, message)
  }
}

/** Reads one message (envelope included) from `decoder`. */
export function readMessage(decoder: Decoder): DecodedMessage {
  decoder.readVersion(FRAME_FORMAT, 'sync frame')
  const code = decoder.readUint8()
  switch (code) {
    case MessageType.hello:
      return readHello(decoder)
    case MessageType.helloOk:
      return readHelloOk(decoder)
    case MessageType.refuse:
      return readRefuse(decoder)
    case MessageType.versions:
      return readVersions(decoder)
    case MessageType.delta:
      return readDelta(decoder)
    case MessageType.transaction:
    case MessageType.independent:
      return readTransaction(decoder, code === MessageType.independent)
    case MessageType.ack:
      return readAck(decoder)
    case MessageType.chunk:
      return readChunk(decoder)
    case MessageType.done:
      return readDone(decoder)
    case MessageType.request:
      return { type: 'request' }
    case MessageType.reject:
      return readReject(decoder)
    case MessageType.auth:
      return readAuth(decoder)
    case MessageType.presence:
      return readPresence(decoder)
    case MessageType.provenance:
      return readProvenance(decoder)
    case MessageType.ranges:
      return readRanges(decoder)
    case MessageType.want:
      return readWant(decoder)
    default:
      // Forward compatibility: skip the payload of a type we do not know.
      decoder.readRaw(decoder.remaining)
      return { type: 'unknown', code }
  }
}

/** Encodes one message as a whole frame. */
export function encodeMessage(message: Message): Uint8Array {
  const encoder = new Encoder(64)
  writeMessage(encoder, message)
  return encoder.finish()
}

/** Decodes one whole frame; throws {@link DecodeError} on any malformed input. */
export function decodeMessage(frame: Uint8Array): DecodedMessage {
  return decodeGuarded('sync message', frame, readMessage)
}
