/**
 * Wire messages of the Concord sync protocol and their codecs. One frame is
 * one message: `[frame format = 1][message type][payload]` (see
 * `sync/PROTOCOL.md` for the byte layouts). Pure: Uint8Array only.
 *
 * Decoding validates everything (lengths, counts, names, type tags) and
 * throws {@link DecodeError} on bad input; an unknown message type decodes to
 * an {@link UnknownMessage} so newer peers can add messages (forward
 * compatibility).
 */
import { MAX_AGENT_ID_LENGTH, type AgentId } from '../crdt/agent-id.ts'
import { type Decoder, Encoder, decodeGuarded } from '../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { KNOWN_TYPES, isKnownType } from '../crdt/catalog.ts'
import { PROVENANCE_LIMITS } from '../crdt/provenance.ts'
import { readSignature, type RecordSignature, writeSignature } from '../crdt/signature.ts'
import { PROOF_BYTES } from './credentials.ts'
import { MAX_NAME_LENGTH, isAllNames, isValidName, type NameFilter } from './names.ts'
import { readPresenceEntries, writePresenceEntries, type PresenceEntry } from './presence.ts'
import { readRanges, writeRanges, type RangesMessage } from './reconcile-codec.ts'

export type { RangesMessage } from './reconcile-codec.ts'

/** First byte of every frame: the envelope format. Frozen forever; changes go through the protocol version. */
export const FRAME_FORMAT = 1
/** The highest sync protocol version this code speaks (2: challenge-response credentials, AUTH). */
export const PROTOCOL_VERSION = 2
/** Oldest protocol version this code accepts. */
export const MIN_PROTOCOL_VERSION = 1

/** Message type bytes. Never reuse a retired number. */
export const MessageType = {
  hello: 1,
  helloOk: 2,
  refuse: 3,
  versions: 4,
  delta: 5,
  transaction: 6,
  ack: 7,
  chunk: 8,
  done: 9,
  request: 10,
  reject: 11,
  auth: 12,
  presence: 13,
  provenance: 14,
  ranges: 15,
  want: 16,
  /** A TRANSACTION whose names never shared a unit on the sender (sent only to a peer announcing `independent`). */
  independent: 17,
} as const

/** Why a connection is refused (REFUSE). Unknown codes decode as `'other'`. */
export type RefuseReason = 'version' | 'auth' | 'protocol' | 'limit' | 'shutdown' | 'other'

const refuseCodes: Record<RefuseReason, number> = { version: 1, auth: 2, protocol: 3, limit: 4, shutdown: 5, other: 0 }
const refuseByCode = new Map<number, RefuseReason>(Object.entries(refuseCodes).map(([k, v]) => [v, k as RefuseReason]))

/** Every replica type tag a peer of this version knows: the catalog's (crdt/catalog.ts). */
export { KNOWN_TYPES }

/** First message on a connection, from both sides. */
export interface HelloMessage {
  readonly type: 'hello'
  /** Protocol versions the sender speaks, `min..max`. */
  readonly minVersion: number
  readonly maxVersion: number
  readonly agentId: AgentId
  /** Credentials; empty when none. Never put it in a URL. */
  readonly token: string
  /** The names the sender wants to receive. */
  readonly filter: NameFilter
  /** Largest frame the sender accepts; bigger messages are chunked. */
  readonly maxFrameBytes: number
  /** How many unacknowledged commits the sender accepts in flight (flow control). */
  readonly window: number
  /** Optional features, by key; unknown keys are ignored. */
  readonly extensions: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }>
}

/** The sender accepted the other side's HELLO. */
export interface HelloOkMessage {
  readonly type: 'hello-ok'
  /** The protocol version both sides now speak. */
  readonly version: number
}

/** The sender refuses the connection and closes it. */
export interface RefuseMessage {
  readonly type: 'refuse'
  readonly reason: RefuseReason
  readonly message: string
  /** Versions the sender speaks (useful with reason `version`). */
  readonly minVersion: number
  readonly maxVersion: number
}

/** One name's version in a VERSIONS message. */
export interface VersionEntry {
  readonly name: string
  readonly replicaType: ReplicaType
  readonly version: Uint8Array
}

/** What the sender holds: the receiver answers with what the sender lacks, then DONE. */
export interface VersionsMessage {
  readonly type: 'versions'
  readonly entries: readonly VersionEntry[]
}

/** One name's delta in a commit. */
export interface DeltaEntry {
  readonly name: string
  readonly replicaType: ReplicaType
  readonly delta: Uint8Array
  /**
   * Its author's signature (crdt/signature.ts). Not part of DELTA or
   * TRANSACTION: it travels in the PROVENANCE before them, to a remote that
   * announced `signatures`.
   */
  readonly signature?: RecordSignature | undefined
}

/** A delta of one name. */
export interface DeltaMessage {
  readonly type: 'delta'
  /** Per-connection commit sequence number (1, 2, ...). */
  readonly seq: number
  readonly entry: DeltaEntry
}

/** Deltas of several names, applied and persisted all or none. */
export interface TransactionMessage {
  readonly type: 'transaction'
  readonly seq: number
  readonly entries: readonly DeltaEntry[]
  /**
   * Its names never shared a unit on the sender (an anti-entropy bundle of
   * unrelated names, type byte 17, INDEPENDENT): applied all or none as
   * any TRANSACTION, but the receiver need not keep them together later.
   */
  readonly independent?: true | undefined
}

/**
 * The end of a reconciliation (sync/reconcile.ts), from its initiator: the
 * names it found to differ, with its versions (the receiver answers with
 * what the sender lacks of them, as for VERSIONS, then DONE), and the names
 * the receiver holds and the sender lacks (answered whole). Names the
 * receiver found the sender lacks are answered too without being listed.
 */
export interface WantMessage {
  readonly type: 'want'
  /** The reconciliation it ends. */
  readonly id: number
  /**
   * `initiator`: the initiator's WANT. `responder`: a mutual
   * reconciliation's WANT back (sync/PROTOCOL.md "Reconciliation"): the
   * responder's versions of the names that differ, answered by the
   * initiator with them, the names it found the responder lacks and those
   * committed to on its side since its snapshot.
   */
  readonly from: 'initiator' | 'responder'
  readonly entries: readonly VersionEntry[]
  readonly lacking: readonly string[]
}

/** The receiver has processed (persisted or rejected) every commit up to `seq`. */
export interface AckMessage {
  readonly type: 'ack'
  readonly seq: number
}

/** A part of a message too large for one frame. */
export interface ChunkMessage {
  readonly type: 'chunk'
  /** Per-connection id of the chunked message. */
  readonly id: number
  readonly index: number
  readonly count: number
  /** Size of the whole message, so the receiver can refuse it up front. */
  readonly totalBytes: number
  readonly bytes: Uint8Array
}

/** End of the answer to a VERSIONS: everything up to commit `seq` of the sender is covered. */
export interface DoneMessage {
  readonly type: 'done'
  readonly seq: number
}

/** Asks the receiver to send its VERSIONS (the sender wants to resync it). */
export interface RequestMessage {
  readonly type: 'request'
}

/** A commit the receiver refused (never applied); it still counts as acknowledged. */
export interface RejectMessage {
  readonly type: 'reject'
  readonly seq: number
  /** The first entry's name that was refused. */
  readonly name: string
  /** A stable ConcordError code (`CONCORD_FORBIDDEN`, `CONCORD_TYPE_MISMATCH`, ...). */
  readonly code: string
  readonly message: string
}

/**
 * Protocol 2: proof that the sender holds its secret, sent once both HELLOs
 * are known (see sync/credentials.ts). Empty when the sender has no secret.
 */
export interface AuthMessage {
  readonly type: 'auth'
  /** HELLO-bound HMAC-SHA-256 ({@link PROOF_BYTES} bytes), or empty. */
  readonly proof: Uint8Array
}

/**
 * Presence entries (sync/presence.ts), sent only to a remote whose HELLO
 * announced the `presence` extension; relayed by peers, never persisted.
 */
export interface PresenceMessage {
  readonly type: 'presence'
  readonly entries: readonly PresenceEntry[]
}

/**
 * Who made the next commit (its seq) and why: sent right before it, only to
 * a remote whose HELLO announced the `provenance` extension
 * (sync/provenance.ts). Without it a commit is the sending peer's.
 */
export interface ProvenanceMessage {
  readonly type: 'provenance'
  /** The seq of the commit it describes. */
  readonly seq: number
  /** The authoring agent. */
  readonly agent: string
  readonly message?: string | undefined
  /** Canonical JSON of an object. */
  readonly metaJson?: string | undefined
  /** When the author made it (its HLC there). */
  readonly authored?: { readonly wall: number; readonly logical: number } | undefined
  /**
   * The author's signature of each entry of the commit, in order (flag bit
   * 3; only to a remote that announced `signatures`): undefined for an
   * entry that is not signed.
   */
  readonly signatures?: ReadonlyArray<RecordSignature | undefined> | undefined
}

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

/**
 * Limits on decoded fields. Every length and count read from the wire is
 * checked against these (and against the bytes that remain) before anything
 * is decoded or allocated for it.
 */
export const WIRE_LIMITS = {
  maxTokenBytes: 4096,
  maxFilterItems: 4096,
  maxExtensions: 64,
  maxExtensionKeyBytes: 256,
  maxExtensionValueBytes: 64 * 1024,
  maxMessageLength: 4096,
  /** An agent id is at most 256 UTF-16 code units: at most 3 UTF-8 bytes each. */
  maxAgentIdBytes: 3 * 256,
  /** A name is at most {@link MAX_NAME_LENGTH} UTF-16 code units: at most 3 UTF-8 bytes each. */
  maxNameBytes: 3 * MAX_NAME_LENGTH,
  /** The longest type tag (`lww-register`), with room. */
  maxTypeBytes: 32,
  /** Entries of one VERSIONS or TRANSACTION: the protocol's ceiling on the names one peer syncs (answers are split below it). */
  maxEntries: 1 << 20,
} as const

/**
 * The fewest bytes one VERSIONS or TRANSACTION entry takes: a name of one
 * byte (2), the shortest type tag `yjs` (4), an empty version or delta (1).
 */
const MIN_ENTRY_BYTES = 7

function writeType(encoder: Encoder, type: ReplicaType): void {
  encoder.writeString(type)
}

function readType(decoder: Decoder): ReplicaType {
  const type = decoder.readString(WIRE_LIMITS.maxTypeBytes)
  if (!isKnownType(type)) throw new DecodeError(`unknown replica type "${type.slice(0, 40)}"`)
  return type as ReplicaType
}

function readName(decoder: Decoder): string {
  const name = decoder.readString(WIRE_LIMITS.maxNameBytes)
  if (!isValidName(name)) throw new DecodeError(`invalid name (empty or longer than ${MAX_NAME_LENGTH})`)
  return name
}

/** Writes a name; one the decoder would refuse (empty, too long, a lone surrogate) is `CONCORD_INVALID_ARGUMENT`. */
function writeName(encoder: Encoder, name: string): void {
  if (!isValidName(name))
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `cannot send the name ${JSON.stringify(String(name).slice(0, 40))}: not a non-empty, well-formed string of at most ${MAX_NAME_LENGTH} characters`,
    )
  encoder.writeString(name)
}

function readLimitedString(decoder: Decoder, maxBytes: number, what: string): string {
  try {
    return decoder.readString(maxBytes)
  } catch (error) {
    throw new DecodeError(`${what}: ${(error as Error).message}`, { cause: error })
  }
}

/** A count of VERSIONS or TRANSACTION entries: within the remaining bytes and {@link WIRE_LIMITS}.maxEntries. */
function readEntryCount(decoder: Decoder, what: string): number {
  const count = decoder.readCount(MIN_ENTRY_BYTES)
  if (count > WIRE_LIMITS.maxEntries) throw new DecodeError(`${what}: ${count} entries, over the limit of ${WIRE_LIMITS.maxEntries}`)
  return count
}

function readPositive(decoder: Decoder, what: string): number {
  const value = decoder.readVarUint()
  if (value < 1) throw new DecodeError(`${what} must be at least 1`)
  return value
}

function writeEntry(encoder: Encoder, entry: DeltaEntry): void {
  writeName(encoder, entry.name)
  writeType(encoder, entry.replicaType)
  encoder.writeBytes(entry.delta)
}

function readEntry(decoder: Decoder): DeltaEntry {
  return { name: readName(decoder), replicaType: readType(decoder), delta: decoder.readBytes() }
}

/** Writes one message (envelope included) into `encoder`. */
export function writeMessage(encoder: Encoder, message: Message): void {
  encoder.writeUint8(FRAME_FORMAT)
  switch (message.type) {
    case 'hello': {
      encoder.writeUint8(MessageType.hello)
      encoder.writeVarUint(message.minVersion).writeVarUint(message.maxVersion)
      encoder.writeString(message.agentId).writeString(message.token)
      if (isAllNames(message.filter)) {
        encoder.writeUint8(0)
      } else {
        encoder.writeUint8(1)
        const names = message.filter.names ?? []
        const prefixes = message.filter.prefixes ?? []
        encoder.writeVarUint(names.length)
        for (const name of names) writeName(encoder, name)
        encoder.writeVarUint(prefixes.length)
        for (const prefix of prefixes) encoder.writeString(prefix)
      }
      encoder.writeVarUint(message.maxFrameBytes).writeVarUint(message.window)
      encoder.writeVarUint(message.extensions.length)
      for (const { key, value } of message.extensions) encoder.writeString(key).writeBytes(value)
      return
    }
    case 'hello-ok':
      encoder.writeUint8(MessageType.helloOk).writeVarUint(message.version)
      return
    case 'refuse':
      encoder.writeUint8(MessageType.refuse).writeUint8(refuseCodes[message.reason])
      encoder.writeString(message.message.slice(0, 1000)).writeVarUint(message.minVersion).writeVarUint(message.maxVersion)
      return
    case 'versions':
      encoder.writeUint8(MessageType.versions).writeVarUint(message.entries.length)
      for (const entry of message.entries) {
        writeName(encoder, entry.name)
        writeType(encoder, entry.replicaType)
        encoder.writeBytes(entry.version)
      }
      return
    case 'delta':
      encoder.writeUint8(MessageType.delta).writeVarUint(message.seq)
      writeEntry(encoder, message.entry)
      return
    case 'transaction':
      encoder
        .writeUint8(message.independent ? MessageType.independent : MessageType.transaction)
        .writeVarUint(message.seq)
        .writeVarUint(message.entries.length)
      for (const entry of message.entries) writeEntry(encoder, entry)
      return
    case 'ack':
      encoder.writeUint8(MessageType.ack).writeVarUint(message.seq)
      return
    case 'chunk':
      encoder.writeUint8(MessageType.chunk).writeVarUint(message.id).writeVarUint(message.index)
      encoder.writeVarUint(message.count).writeVarUint(message.totalBytes).writeBytes(message.bytes)
      return
    case 'done':
      encoder.writeUint8(MessageType.done).writeVarUint(message.seq)
      return
    case 'request':
      encoder.writeUint8(MessageType.request)
      return
    case 'reject':
      encoder.writeUint8(MessageType.reject).writeVarUint(message.seq)
      writeName(encoder, message.name)
      encoder.writeString(message.code).writeString(message.message.slice(0, 1000))
      return
    case 'auth':
      encoder.writeUint8(MessageType.auth).writeBytes(message.proof)
      return
    case 'presence':
      encoder.writeUint8(MessageType.presence)
      writePresenceEntries(encoder, message.entries)
      return
    case 'provenance':
      encoder.writeUint8(MessageType.provenance).writeVarUint(message.seq).writeString(message.agent)
      encoder.writeUint8(
        (message.message !== undefined ? 1 : 0) |
          (message.metaJson !== undefined ? 2 : 0) |
          (message.authored !== undefined ? 4 : 0) |
          (message.signatures !== undefined ? 8 : 0),
      )
      if (message.message !== undefined) encoder.writeString(message.message)
      if (message.metaJson !== undefined) encoder.writeString(message.metaJson)
      if (message.authored !== undefined) encoder.writeVarUint(message.authored.wall).writeVarUint(message.authored.logical)
      if (message.signatures !== undefined) {
        encoder.writeVarUint(message.signatures.length)
        for (const signature of message.signatures) {
          encoder.writeUint8(signature === undefined ? 0 : signature.publicKey === undefined ? 1 : 3)
          if (signature !== undefined) writeSignature(encoder, signature)
        }
      }
      return
    case 'ranges':
      encoder.writeUint8(MessageType.ranges)
      writeRanges(encoder, message)
      return
    case 'want':
      encoder
        .writeUint8(MessageType.want)
        .writeVarUint(message.id)
        .writeUint8(message.from === 'initiator' ? 0 : 1)
        .writeVarUint(message.entries.length)
      for (const entry of message.entries) {
        writeName(encoder, entry.name)
        writeType(encoder, entry.replicaType)
        encoder.writeBytes(entry.version)
      }
      encoder.writeVarUint(message.lacking.length)
      for (const name of message.lacking) writeName(encoder, name)
      return
  }
}

/** Reads one message (envelope included) from `decoder`. */
export function readMessage(decoder: Decoder): DecodedMessage {
  decoder.readVersion(FRAME_FORMAT, 'sync frame')
  const code = decoder.readUint8()
  switch (code) {
    case MessageType.hello: {
      const minVersion = decoder.readVarUint()
      const maxVersion = decoder.readVarUint()
      if (minVersion > maxVersion) throw new DecodeError('hello: minVersion > maxVersion')
      const id = readLimitedString(decoder, WIRE_LIMITS.maxAgentIdBytes, 'hello: agent id')
      if (id.length === 0 || id.length > MAX_AGENT_ID_LENGTH) throw new DecodeError('hello: invalid agent id')
      const token = readLimitedString(decoder, WIRE_LIMITS.maxTokenBytes, 'hello: token')
      const kind = decoder.readUint8()
      let filter: NameFilter
      if (kind === 0) {
        filter = {}
      } else if (kind === 1) {
        const nameCount = decoder.readCount(2)
        if (nameCount > WIRE_LIMITS.maxFilterItems) throw new DecodeError('hello: too many filter names')
        const names: string[] = []
        for (let i = 0; i < nameCount; i++) names.push(readName(decoder))
        const prefixCount = decoder.readCount(1)
        if (prefixCount > WIRE_LIMITS.maxFilterItems) throw new DecodeError('hello: too many filter prefixes')
        const prefixes: string[] = []
        for (let i = 0; i < prefixCount; i++) {
          const prefix = readLimitedString(decoder, WIRE_LIMITS.maxNameBytes, 'hello: prefix')
          if (prefix.length > MAX_NAME_LENGTH) throw new DecodeError('hello: prefix too long')
          prefixes.push(prefix)
        }
        filter = { names, prefixes }
      } else {
        throw new DecodeError(`hello: unknown filter kind ${kind}`)
      }
      const maxFrameBytes = readPositive(decoder, 'hello: maxFrameBytes')
      const window = readPositive(decoder, 'hello: window')
      const extensionCount = decoder.readCount(2)
      if (extensionCount > WIRE_LIMITS.maxExtensions) throw new DecodeError('hello: too many extensions')
      const extensions: Array<{ key: string; value: Uint8Array }> = []
      for (let i = 0; i < extensionCount; i++) {
        const key = readLimitedString(decoder, WIRE_LIMITS.maxExtensionKeyBytes, 'hello: extension key')
        extensions.push({ key, value: decoder.readBytes(WIRE_LIMITS.maxExtensionValueBytes) })
      }
      return { type: 'hello', minVersion, maxVersion, agentId: id as AgentId, token, filter, maxFrameBytes, window, extensions }
    }
    case MessageType.helloOk:
      return { type: 'hello-ok', version: decoder.readVarUint() }
    case MessageType.refuse: {
      const reason = refuseByCode.get(decoder.readUint8()) ?? 'other'
      const message = readLimitedString(decoder, WIRE_LIMITS.maxMessageLength, 'refuse: message')
      return { type: 'refuse', reason, message, minVersion: decoder.readVarUint(), maxVersion: decoder.readVarUint() }
    }
    case MessageType.versions: {
      const count = readEntryCount(decoder, 'versions')
      const entries: VersionEntry[] = []
      for (let i = 0; i < count; i++) entries.push({ name: readName(decoder), replicaType: readType(decoder), version: decoder.readBytes() })
      return { type: 'versions', entries }
    }
    case MessageType.delta:
      return { type: 'delta', seq: readPositive(decoder, 'delta: seq'), entry: readEntry(decoder) }
    case MessageType.transaction:
    case MessageType.independent: {
      const seq = readPositive(decoder, 'transaction: seq')
      const count = readEntryCount(decoder, 'transaction')
      if (count === 0) throw new DecodeError('transaction: no entries')
      const entries: DeltaEntry[] = []
      for (let i = 0; i < count; i++) entries.push(readEntry(decoder))
      return code === MessageType.independent ? { type: 'transaction', seq, entries, independent: true } : { type: 'transaction', seq, entries }
    }
    case MessageType.ack:
      return { type: 'ack', seq: decoder.readVarUint() }
    case MessageType.chunk: {
      const id = decoder.readVarUint()
      const index = decoder.readVarUint()
      const count = readPositive(decoder, 'chunk: count')
      if (index >= count) throw new DecodeError('chunk: index out of range')
      const totalBytes = decoder.readVarUint()
      const bytes = decoder.readBytes()
      if (bytes.length > totalBytes) throw new DecodeError('chunk: part larger than the whole')
      return { type: 'chunk', id, index, count, totalBytes, bytes }
    }
    case MessageType.done:
      return { type: 'done', seq: decoder.readVarUint() }
    case MessageType.request:
      return { type: 'request' }
    case MessageType.reject: {
      const seq = readPositive(decoder, 'reject: seq')
      const name = readName(decoder)
      const errorCode = readLimitedString(decoder, 64, 'reject: code')
      return { type: 'reject', seq, name, code: errorCode, message: readLimitedString(decoder, WIRE_LIMITS.maxMessageLength, 'reject: message') }
    }
    case MessageType.auth: {
      const proof = decoder.readBytes()
      if (proof.length !== 0 && proof.length !== PROOF_BYTES) throw new DecodeError(`auth: a proof has ${PROOF_BYTES} bytes, not ${proof.length}`)
      return { type: 'auth', proof }
    }
    case MessageType.presence:
      return { type: 'presence', entries: readPresenceEntries(decoder) }
    case MessageType.provenance: {
      // Bounds in bytes here (4 per character at most); admission checks them in characters, and meta as a JSON object.
      const seq = readPositive(decoder, 'provenance: seq')
      const agent = readLimitedString(decoder, 4 * PROVENANCE_LIMITS.maxAgent, 'provenance: agent')
      const flags = decoder.readUint8()
      if (flags & ~15) throw new DecodeError(`provenance: unknown flags ${flags}`)
      const message = flags & 1 ? readLimitedString(decoder, 4 * PROVENANCE_LIMITS.maxMessage, 'provenance: message') : undefined
      const metaJson = flags & 2 ? readLimitedString(decoder, PROVENANCE_LIMITS.maxMetaBytes, 'provenance: meta') : undefined
      const authored = flags & 4 ? { wall: decoder.readVarUint(), logical: decoder.readVarUint() } : undefined
      if (!(flags & 8)) return { type: 'provenance', seq, agent, message, metaJson, authored }
      // One byte at least per entry, checked against the bytes that remain before anything is allocated.
      const count = decoder.readCount(1)
      if (count > WIRE_LIMITS.maxEntries) throw new DecodeError(`provenance: ${count} signatures, over ${WIRE_LIMITS.maxEntries}`)
      const signatures: Array<RecordSignature | undefined> = []
      for (let i = 0; i < count; i++) {
        const form = decoder.readUint8()
        if (form !== 0 && form !== 1 && form !== 3) throw new DecodeError(`provenance: unknown signature form ${form}`)
        signatures.push(form === 0 ? undefined : readSignature(decoder, form === 3))
      }
      return { type: 'provenance', seq, agent, message, metaJson, authored, signatures }
    }
    case MessageType.ranges:
      return readRanges(decoder)
    case MessageType.want: {
      const id = decoder.readVarUint()
      const fromByte = decoder.readUint8()
      if (fromByte > 1) throw new DecodeError(`want: unknown sender role ${fromByte}`)
      const count = readEntryCount(decoder, 'want')
      const entries: VersionEntry[] = []
      for (let i = 0; i < count; i++) entries.push({ name: readName(decoder), replicaType: readType(decoder), version: decoder.readBytes() })
      const lackingCount = decoder.readCount(2)
      if (lackingCount > WIRE_LIMITS.maxEntries) throw new DecodeError(`want: ${lackingCount} names, over the limit of ${WIRE_LIMITS.maxEntries}`)
      const lacking: string[] = []
      for (let i = 0; i < lackingCount; i++) lacking.push(readName(decoder))
      return { type: 'want', id, from: fromByte === 0 ? 'initiator' : 'responder', entries, lacking }
    }
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
