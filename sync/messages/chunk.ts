/**
 * CHUNK, a part of a message too large for one frame, and its codec
 * (sync/PROTOCOL.md "Messages"; split and joined by sync/chunking.ts).
 */
import type { Decoder, Encoder } from '../../crdt/codec.ts'
import { DecodeError } from '../../crdt/errors.ts'
import { MessageType } from './envelope.ts'
import { readPositive } from './fields.ts'

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

/** Writes a CHUNK (type byte included). */
export function writeChunk(encoder: Encoder, message: ChunkMessage): void {
  encoder.writeUint8(MessageType.chunk).writeVarUint(message.id).writeVarUint(message.index)
  encoder.writeVarUint(message.count).writeVarUint(message.totalBytes).writeBytes(message.bytes)
}

/** Reads a CHUNK's payload: its index below its count, its part no larger than the whole. */
export function readChunk(decoder: Decoder): ChunkMessage {
  const id = decoder.readVarUint()
  const index = decoder.readVarUint()
  const count = readPositive(decoder, 'chunk: count')
  if (index >= count) throw new DecodeError('chunk: index out of range')
  const totalBytes = decoder.readVarUint()
  const bytes = decoder.readBytes()
  if (bytes.length > totalBytes) throw new DecodeError('chunk: part larger than the whole')
  return { type: 'chunk', id, index, count, totalBytes, bytes }
}
