/**
 * The commit flow's messages and their codecs: DELTA, TRANSACTION (and
 * INDEPENDENT, its type byte 17), the PROVENANCE sent before a commit, and
 * the receiver's ACK and REJECT (sync/PROTOCOL.md "Messages",
 * "Provenance"). Each writer writes the type byte and the payload; each
 * reader reads the payload after the type byte.
 */
import type { Decoder, Encoder } from '../../crdt/codec.ts'
import { DecodeError } from '../../crdt/errors.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { PROVENANCE_LIMITS } from '../../crdt/provenance.ts'
import { readSignature, type RecordSignature, writeSignature } from '../../crdt/signature.ts'
import { MessageType } from './envelope.ts'
import { WIRE_LIMITS, readEntryCount, readLimitedString, readName, readPositive, readType, writeName, writeType } from './fields.ts'

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

/** The receiver has processed (persisted or rejected) every commit up to `seq`. */
export interface AckMessage {
  readonly type: 'ack'
  readonly seq: number
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

function writeEntry(encoder: Encoder, entry: DeltaEntry): void {
  writeName(encoder, entry.name)
  writeType(encoder, entry.replicaType)
  encoder.writeBytes(entry.delta)
}

function readEntry(decoder: Decoder): DeltaEntry {
  return { name: readName(decoder), replicaType: readType(decoder), delta: decoder.readBytes() }
}

/** Writes a DELTA (type byte included). */
export function writeDelta(encoder: Encoder, message: DeltaMessage): void {
  encoder.writeUint8(MessageType.delta).writeVarUint(message.seq)
  writeEntry(encoder, message.entry)
}

/** Reads a DELTA's payload. */
export function readDelta(decoder: Decoder): DeltaMessage {
  return { type: 'delta', seq: readPositive(decoder, 'delta: seq'), entry: readEntry(decoder) }
}

/** Writes a TRANSACTION, or an INDEPENDENT when it is marked so (type byte included). */
export function writeTransaction(encoder: Encoder, message: TransactionMessage): void {
  encoder
    .writeUint8(message.independent ? MessageType.independent : MessageType.transaction)
    .writeVarUint(message.seq)
    .writeVarUint(message.entries.length)
  for (const entry of message.entries) writeEntry(encoder, entry)
}

/** Reads a TRANSACTION's payload, or an INDEPENDENT's (`independent`: its type byte was 17). */
export function readTransaction(decoder: Decoder, independent: boolean): TransactionMessage {
  const seq = readPositive(decoder, 'transaction: seq')
  const count = readEntryCount(decoder, 'transaction')
  if (count === 0) throw new DecodeError('transaction: no entries')
  const entries: DeltaEntry[] = []
  for (let i = 0; i < count; i++) entries.push(readEntry(decoder))
  return independent ? { type: 'transaction', seq, entries, independent: true } : { type: 'transaction', seq, entries }
}

/** Writes an ACK (type byte included). */
export function writeAck(encoder: Encoder, message: AckMessage): void {
  encoder.writeUint8(MessageType.ack).writeVarUint(message.seq)
}

/** Reads an ACK's payload. */
export function readAck(decoder: Decoder): AckMessage {
  return { type: 'ack', seq: decoder.readVarUint() }
}

/** Writes a REJECT (type byte included); its message is cut to 1,000 characters. */
export function writeReject(encoder: Encoder, message: RejectMessage): void {
  encoder.writeUint8(MessageType.reject).writeVarUint(message.seq)
  writeName(encoder, message.name)
  encoder.writeString(message.code).writeString(message.message.slice(0, 1000))
}

/** Reads a REJECT's payload. */
export function readReject(decoder: Decoder): RejectMessage {
  const seq = readPositive(decoder, 'reject: seq')
  const name = readName(decoder)
  const errorCode = readLimitedString(decoder, 64, 'reject: code')
  return { type: 'reject', seq, name, code: errorCode, message: readLimitedString(decoder, WIRE_LIMITS.maxMessageLength, 'reject: message') }
}

/** Writes a PROVENANCE (type byte included): flag bits 0-3 say which optional fields follow. */
export function writeProvenance(encoder: Encoder, message: ProvenanceMessage): void {
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
}

/** Reads a PROVENANCE's payload. */
export function readProvenance(decoder: Decoder): ProvenanceMessage {
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
