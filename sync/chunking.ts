/**
 * Chunking: a message larger than the frame limit travels as CHUNK frames
 * and is reassembled on the other side, within limits (total size, number of
 * partial messages held at once). Pure: Uint8Array only.
 */
import { ConcordError, DecodeError, ErrorCodes } from '../crdt/errors.ts'
import { encodeMessage, type ChunkMessage } from './messages.ts'

/** Bytes a CHUNK frame spends on its header (envelope, type, ids, counts, length prefix), at most. */
export const CHUNK_OVERHEAD = 48
/** Smallest frame limit that chunking supports. */
export const MIN_FRAME_BYTES = 256

/**
 * Splits an encoded message into CHUNK frames of at most `maxFrameBytes`
 * each. Returns `[message]` unchanged when it already fits.
 */
export function splitIntoChunks(message: Uint8Array, maxFrameBytes: number, id: number): Uint8Array[] {
  if (message.length <= maxFrameBytes) return [message]
  if (maxFrameBytes < MIN_FRAME_BYTES) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `frame limit ${maxFrameBytes} is below the minimum ${MIN_FRAME_BYTES}`)
  }
  const partSize = maxFrameBytes - CHUNK_OVERHEAD
  const count = Math.ceil(message.length / partSize)
  const frames: Uint8Array[] = []
  for (let index = 0; index < count; index++) {
    const bytes = message.subarray(index * partSize, Math.min(message.length, (index + 1) * partSize))
    frames.push(encodeMessage({ type: 'chunk', id, index, count, totalBytes: message.length, bytes }))
  }
  return frames
}

/** Limits of a {@link Reassembler}. */
export interface ReassemblyLimits {
  /** Largest whole message accepted (default 64 MiB). */
  readonly maxMessageBytes: number
  /** Partial messages held at once; the oldest is dropped beyond it (default 4). */
  readonly maxPartial: number
}

interface Partial {
  readonly count: number
  readonly totalBytes: number
  readonly parts: Array<Uint8Array | undefined>
  received: number
  receivedBytes: number
}

/**
 * Reassembles chunked messages. Parts may arrive in any order and twice
 * (duplicates are ignored). Inconsistent or oversized chunks throw
 * {@link DecodeError} and discard that message.
 */
export class Reassembler {
  private readonly partials = new Map<number, Partial>()
  /** Partial messages dropped because too many were pending. */
  evicted = 0

  constructor(private readonly limits: ReassemblyLimits = { maxMessageBytes: 64 * 1024 * 1024, maxPartial: 4 }) {}

  /** Bytes currently held in partial messages. */
  get pendingBytes(): number {
    let total = 0
    for (const partial of this.partials.values()) total += partial.receivedBytes
    return total
  }

  /** Adds a chunk; returns the whole message when this chunk completes it, else `null`. */
  add(chunk: ChunkMessage): Uint8Array | null {
    if (chunk.totalBytes > this.limits.maxMessageBytes) {
      this.partials.delete(chunk.id)
      throw new DecodeError(`chunked message of ${chunk.totalBytes} bytes exceeds the limit of ${this.limits.maxMessageBytes}`)
    }
    let partial = this.partials.get(chunk.id)
    if (partial && (partial.count !== chunk.count || partial.totalBytes !== chunk.totalBytes)) {
      this.partials.delete(chunk.id)
      throw new DecodeError(`chunk ${chunk.id}: inconsistent count or size`)
    }
    if (!partial) {
      if (chunk.count > chunk.totalBytes + 1) throw new DecodeError(`chunk ${chunk.id}: more parts than bytes`)
      while (this.partials.size >= this.limits.maxPartial) {
        const oldest = this.partials.keys().next().value as number
        this.partials.delete(oldest)
        this.evicted++
      }
      partial = { count: chunk.count, totalBytes: chunk.totalBytes, parts: new Array(chunk.count), received: 0, receivedBytes: 0 }
      this.partials.set(chunk.id, partial)
    }
    if (partial.parts[chunk.index] !== undefined) return null
    if (partial.receivedBytes + chunk.bytes.length > partial.totalBytes) {
      this.partials.delete(chunk.id)
      throw new DecodeError(`chunk ${chunk.id}: parts exceed the announced size`)
    }
    partial.parts[chunk.index] = chunk.bytes.slice()
    partial.received++
    partial.receivedBytes += chunk.bytes.length
    if (partial.received < partial.count) return null
    this.partials.delete(chunk.id)
    if (partial.receivedBytes !== partial.totalBytes) throw new DecodeError(`chunk ${chunk.id}: parts do not add up to the announced size`)
    const whole = new Uint8Array(partial.totalBytes)
    let offset = 0
    for (const part of partial.parts) {
      whole.set(part!, offset)
      offset += part!.length
    }
    return whole
  }

  /** Drops every partial message. */
  clear(): void {
    this.partials.clear()
  }
}
