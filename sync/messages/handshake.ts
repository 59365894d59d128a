/**
 * The handshake's messages and their codecs: HELLO, HELLO-OK, REFUSE and
 * AUTH (sync/PROTOCOL.md "Messages", "Credentials"). Each writer writes the
 * type byte and the payload; each reader reads the payload after the type
 * byte. The HELLO layout is frozen for every protocol version.
 */
import { MAX_AGENT_ID_LENGTH, type AgentId } from '../../crdt/agent-id.ts'
import type { Decoder, Encoder } from '../../crdt/codec.ts'
import { DecodeError } from '../../crdt/errors.ts'
import { PROOF_BYTES } from '../credentials.ts'
import { MAX_NAME_LENGTH, isAllNames, type NameFilter } from '../names.ts'
import { MessageType } from './envelope.ts'
import { WIRE_LIMITS, readLimitedString, readName, readPositive, writeName } from './fields.ts'

/** Why a connection is refused (REFUSE). Unknown codes decode as `'other'`. */
export type RefuseReason = 'version' | 'auth' | 'protocol' | 'limit' | 'shutdown' | 'other'

const refuseCodes: Record<RefuseReason, number> = { version: 1, auth: 2, protocol: 3, limit: 4, shutdown: 5, other: 0 }
const refuseByCode = new Map<number, RefuseReason>(Object.entries(refuseCodes).map(([k, v]) => [v, k as RefuseReason]))

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

/**
 * Protocol 2: proof that the sender holds its secret, sent once both HELLOs
 * are known (see sync/credentials.ts). Empty when the sender has no secret.
 */
export interface AuthMessage {
  readonly type: 'auth'
  /** HELLO-bound HMAC-SHA-256 ({@link PROOF_BYTES} bytes), or empty. */
  readonly proof: Uint8Array
}

/** Writes a HELLO (type byte included). */
export function writeHello(encoder: Encoder, message: HelloMessage): void {
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
}

/** Reads a HELLO's payload. */
export function readHello(decoder: Decoder): HelloMessage {
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

/** Writes a HELLO-OK (type byte included). */
export function writeHelloOk(encoder: Encoder, message: HelloOkMessage): void {
  encoder.writeUint8(MessageType.helloOk).writeVarUint(message.version)
}

/** Reads a HELLO-OK's payload. */
export function readHelloOk(decoder: Decoder): HelloOkMessage {
  return { type: 'hello-ok', version: decoder.readVarUint() }
}

/** Writes a REFUSE (type byte included); its message is cut to 1,000 characters. */
export function writeRefuse(encoder: Encoder, message: RefuseMessage): void {
  encoder.writeUint8(MessageType.refuse).writeUint8(refuseCodes[message.reason])
  encoder.writeString(message.message.slice(0, 1000)).writeVarUint(message.minVersion).writeVarUint(message.maxVersion)
}

/** Reads a REFUSE's payload; an unknown reason code is `'other'`. */
export function readRefuse(decoder: Decoder): RefuseMessage {
  const reason = refuseByCode.get(decoder.readUint8()) ?? 'other'
  const message = readLimitedString(decoder, WIRE_LIMITS.maxMessageLength, 'refuse: message')
  return { type: 'refuse', reason, message, minVersion: decoder.readVarUint(), maxVersion: decoder.readVarUint() }
}

/** Writes an AUTH (type byte included). */
export function writeAuth(encoder: Encoder, message: AuthMessage): void {
  encoder.writeUint8(MessageType.auth).writeBytes(message.proof)
}

/** Reads an AUTH's payload: a proof of {@link PROOF_BYTES} bytes, or none. */
export function readAuth(decoder: Decoder): AuthMessage {
  const proof = decoder.readBytes()
  if (proof.length !== 0 && proof.length !== PROOF_BYTES) throw new DecodeError(`auth: a proof has ${PROOF_BYTES} bytes, not ${proof.length}`)
  return { type: 'auth', proof }
}
