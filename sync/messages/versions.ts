/**
 * The messages of the version exchange and their codecs: VERSIONS, the
 * REQUEST that asks for one, the DONE that ends an answer, and the WANT
 * that ends a reconciliation (sync/PROTOCOL.md "Messages",
 * "Reconciliation"; RANGES is in sync/reconcile-codec.ts). Each writer
 * writes the type byte and the payload; each reader reads the payload after
 * the type byte.
 */
import type { Decoder, Encoder } from '../../crdt/codec.ts'
import { DecodeError } from '../../crdt/errors.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { MessageType } from './envelope.ts'
import { WIRE_LIMITS, readEntryCount, readName, readType, writeName, writeType } from './fields.ts'

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

/** End of the answer to a VERSIONS: everything up to commit `seq` of the sender is covered. */
export interface DoneMessage {
  readonly type: 'done'
  readonly seq: number
}

/** Asks the receiver to send its VERSIONS (the sender wants to resync it). */
export interface RequestMessage {
  readonly type: 'request'
}

/** Writes a VERSIONS (type byte included). */
export function writeVersions(encoder: Encoder, message: VersionsMessage): void {
  encoder.writeUint8(MessageType.versions).writeVarUint(message.entries.length)
  for (const entry of message.entries) {
    writeName(encoder, entry.name)
    writeType(encoder, entry.replicaType)
    encoder.writeBytes(entry.version)
  }
}

/** Reads a VERSIONS's payload. */
export function readVersions(decoder: Decoder): VersionsMessage {
  const count = readEntryCount(decoder, 'versions')
  const entries: VersionEntry[] = []
  for (let i = 0; i < count; i++) entries.push({ name: readName(decoder), replicaType: readType(decoder), version: decoder.readBytes() })
  return { type: 'versions', entries }
}

/** Writes a DONE (type byte included). */
export function writeDone(encoder: Encoder, message: DoneMessage): void {
  encoder.writeUint8(MessageType.done).writeVarUint(message.seq)
}

/** Reads a DONE's payload. */
export function readDone(decoder: Decoder): DoneMessage {
  return { type: 'done', seq: decoder.readVarUint() }
}

/** Writes a REQUEST (its type byte: it has no payload). */
export function writeRequest(encoder: Encoder): void {
  encoder.writeUint8(MessageType.request)
}

/** Writes a WANT (type byte included). */
export function writeWant(encoder: Encoder, message: WantMessage): void {
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
}

/** Reads a WANT's payload. */
export function readWant(decoder: Decoder): WantMessage {
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
