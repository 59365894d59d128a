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

/**
 * What one held part costs beyond its bytes (the map entry and the array
 * object), charged against the reassembly budget so that many tiny parts
 * cannot hold more memory than the budget says.
 */
export const PART_OVERHEAD_BYTES = 128

/** Limits of a {@link Reassembler}. */
export interface ReassemblyLimits {
  /** Largest whole message accepted (default 64 MiB). */
  readonly maxMessageBytes: number
  /** Partial messages held at once; the oldest is dropped beyond it (default 4). */
  readonly maxPartial: number
  /**
   * Memory held in partial messages at once, all of them together: their
   * bytes plus {@link PART_OVERHEAD_BYTES} per part (default: one largest
   * message in parts of the smallest frames; a sender sends the parts of one
   * message back to back, so one partial message at a time is what it needs).
   */
  readonly maxBufferedBytes?: number | undefined
}

/** The default reassembly budget for messages of up to `maxMessageBytes`. */
export function defaultReassemblyBudget(maxMessageBytes: number): number {
  return maxMessageBytes + Math.ceil(maxMessageBytes / (MIN_FRAME_BYTES - CHUNK_OVERHEAD)) * PART_OVERHEAD_BYTES
}

/** The default limits: 64 MiB messages, 4 partial messages. */
export const DEFAULT_REASSEMBLY_LIMITS: ReassemblyLimits = { maxMessageBytes: 64 * 1024 * 1024, maxPartial: 4 }

interface Partial {
  readonly count: number
  readonly totalBytes: number
  /** Parts received, by index (a map: nothing is allocated for parts that did not come). */
  readonly parts: Map<number, Uint8Array>
  receivedBytes: number
}

/**
 * Reassembles chunked messages. Parts may arrive in any order and twice
 * (duplicates are ignored). Inconsistent or oversized chunks throw
 * {@link DecodeError} and discard that message; a chunk that would take the
 * bytes held past `maxBufferedBytes` throws `CONCORD_LIMIT_EXCEEDED` (the
 * session refuses the peer with `limit`). Nothing is allocated from a count
 * or size a chunk announces: memory grows with the parts that arrived.
 */
export class Reassembler {
  private readonly partials = new Map<number, Partial>()
  private readonly maxBufferedBytes: number
  /** Bytes of the parts held. */
  private buffered = 0
  /** What the parts held cost: their bytes plus the per-part overhead. */
  private charged = 0
  /** Partial messages dropped because too many were pending. */
  evicted = 0

  constructor(private readonly limits: ReassemblyLimits = DEFAULT_REASSEMBLY_LIMITS) {
    this.maxBufferedBytes = limits.maxBufferedBytes ?? defaultReassemblyBudget(limits.maxMessageBytes)
  }

  /** Bytes currently held in partial messages. */
  get pendingBytes(): number {
    return this.buffered
  }

  /** Memory charged for the partial messages held (bytes plus per-part overhead). */
  get heldBytes(): number {
    return this.charged
  }

  /** Adds a chunk; returns the whole message when this chunk completes it, else `null`. */
  add(chunk: ChunkMessage): Uint8Array | null {
    if (chunk.totalBytes > this.limits.maxMessageBytes) {
      this.drop(chunk.id)
      throw new DecodeError(`chunked message of ${chunk.totalBytes} bytes exceeds the limit of ${this.limits.maxMessageBytes}`)
    }
    if (chunk.count > chunk.totalBytes + 1) {
      this.drop(chunk.id)
      throw new DecodeError(`chunk ${chunk.id}: more parts than bytes`)
    }
    let partial = this.partials.get(chunk.id)
    if (partial && (partial.count !== chunk.count || partial.totalBytes !== chunk.totalBytes)) {
      this.drop(chunk.id)
      throw new DecodeError(`chunk ${chunk.id}: inconsistent count or size`)
    }
    if (!partial) {
      while (this.partials.size >= this.limits.maxPartial) {
        this.drop(this.partials.keys().next().value as number)
        this.evicted++
      }
      partial = { count: chunk.count, totalBytes: chunk.totalBytes, parts: new Map(), receivedBytes: 0 }
      this.partials.set(chunk.id, partial)
    }
    if (partial.parts.has(chunk.index)) return null
    if (partial.receivedBytes + chunk.bytes.length > partial.totalBytes) {
      this.drop(chunk.id)
      throw new DecodeError(`chunk ${chunk.id}: parts exceed the announced size`)
    }
    const cost = chunk.bytes.length + PART_OVERHEAD_BYTES
    if (this.charged + cost > this.maxBufferedBytes) {
      this.drop(chunk.id)
      throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `partial messages would hold more than ${this.maxBufferedBytes} bytes`)
    }
    partial.parts.set(chunk.index, chunk.bytes.slice())
    partial.receivedBytes += chunk.bytes.length
    this.buffered += chunk.bytes.length
    this.charged += cost
    if (partial.parts.size < partial.count) return null
    this.drop(chunk.id)
    if (partial.receivedBytes !== partial.totalBytes) throw new DecodeError(`chunk ${chunk.id}: parts do not add up to the announced size`)
    const whole = new Uint8Array(partial.totalBytes)
    let offset = 0
    for (let index = 0; index < partial.count; index++) {
      const part = partial.parts.get(index)!
      whole.set(part, offset)
      offset += part.length
    }
    return whole
  }

  /** Drops every partial message. */
  clear(): void {
    this.partials.clear()
    this.buffered = 0
    this.charged = 0
  }

  private drop(id: number): void {
    const partial = this.partials.get(id)
    if (!partial) return
    this.partials.delete(id)
    this.buffered -= partial.receivedBytes
    this.charged -= partial.receivedBytes + partial.parts.size * PART_OVERHEAD_BYTES
  }
}
