/**
 * Length-prefixed framing for Concord frames on a libp2p stream.
 *
 * Wire format of the `/concord/sync/1.0.0` stream (the protocol id versions
 * the framing; the frames themselves start with the sync layer's version
 * byte): a sequence of `varuint(length) bytes[length]`, the length an
 * unsigned LEB128 integer (the multiformats unsigned-varint used across
 * libp2p) of at most 5 bytes, and never above the configured maximum frame
 * size. Zero-length frames are allowed.
 *
 * The {@link FrameDecoder} is incremental: it takes stream chunks split at
 * any byte and returns the whole frames completed so far. A length above the
 * limit or a prefix longer than 5 bytes is rejected as soon as it is read,
 * before any byte of the body is buffered. Nothing is allocated from the
 * announced length: a partial body grows with the bytes that arrived (at
 * most twice them, plus 64 KiB), so a hostile peer that announces 16 MiB
 * and sends 4 bytes makes it hold 64 KiB, not 16 MiB.
 */
import { ConcordError, DecodeError, ErrorCodes } from '../../crdt/errors.ts'

const EMPTY = new Uint8Array(0)
/** The first buffer of a partial body, at most (then it doubles). */
const MIN_GROWTH = 64 * 1024

/** Longest length prefix accepted (5 LEB128 bytes hold 35 bits). */
export const MAX_PREFIX_BYTES = 5

/** Number of bytes the LEB128 prefix of `length` takes. */
export function prefixLength(length: number): number {
  let bytes = 1
  while (length > 0x7f) {
    length = Math.floor(length / 0x80)
    bytes++
  }
  return bytes
}

/**
 * Encodes one frame as `varuint(length) bytes` into a fresh buffer (the
 * caller may reuse `frame` once this returns).
 * @throws ConcordError `CONCORD_LIMIT_EXCEEDED` when `frame` is larger than `maxFrameBytes`.
 */
export function encodeFrame(frame: Uint8Array, maxFrameBytes: number): Uint8Array {
  const length = frame.byteLength
  if (length > maxFrameBytes) {
    throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `frame of ${length} bytes is over the limit of ${maxFrameBytes} bytes`)
  }
  const out = new Uint8Array(prefixLength(length) + length)
  let offset = 0
  let value = length
  while (value > 0x7f) {
    out[offset++] = (value % 0x80) | 0x80
    value = Math.floor(value / 0x80)
  }
  out[offset++] = value
  out.set(frame, offset)
  return out
}

/** Incremental decoder of a length-prefixed frame stream; see the module comment. */
export class FrameDecoder {
  private readonly maxFrameBytes: number
  /** Length being read: value so far and number of prefix bytes consumed. */
  private lengthValue = 0
  private prefixBytes = 0
  /** Length of the body being read, once its prefix is read. */
  private bodyLength: number | undefined
  /** That body so far: a buffer grown as bytes arrive (at most twice what arrived, plus 64 KiB), and its fill. */
  private body: Uint8Array = EMPTY
  private filled = 0
  private failed: DecodeError | undefined

  constructor(maxFrameBytes: number) {
    if (!Number.isSafeInteger(maxFrameBytes) || maxFrameBytes < 0 || maxFrameBytes >= 2 ** 35) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `maxFrameBytes must be an integer in [0, 2^35), got ${maxFrameBytes}`)
    }
    this.maxFrameBytes = maxFrameBytes
  }

  /** True while a frame is partly read (a stream that ends now was cut mid-frame). */
  get midFrame(): boolean {
    return this.prefixBytes > 0 || this.bodyLength !== undefined
  }

  /** Bytes of the partial frame held. */
  get bufferedBytes(): number {
    return this.filled
  }

  /**
   * Feeds one chunk; returns the frames it completed, in order.
   * @throws DecodeError (`CONCORD_DECODE_ERROR`) on an over-long prefix or a
   * length above the limit; the decoder then stays failed.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    if (this.failed) throw this.failed
    const frames: Uint8Array[] = []
    let offset = 0
    while (offset < chunk.byteLength) {
      if (this.bodyLength === undefined) {
        const byte = chunk[offset++]
        this.lengthValue += (byte & 0x7f) * 2 ** (7 * this.prefixBytes)
        this.prefixBytes++
        if (byte & 0x80) {
          if (this.prefixBytes >= MAX_PREFIX_BYTES) return this.fail(`frame length prefix longer than ${MAX_PREFIX_BYTES} bytes`)
          if (this.lengthValue > this.maxFrameBytes) return this.fail(`frame length over the limit of ${this.maxFrameBytes} bytes`)
          continue
        }
        const length = this.lengthValue
        this.lengthValue = 0
        this.prefixBytes = 0
        if (length > this.maxFrameBytes) return this.fail(`frame of ${length} bytes is over the limit of ${this.maxFrameBytes} bytes`)
        if (chunk.byteLength - offset >= length) {
          // The whole body is in this chunk: copy it out into a plain
          // Uint8Array (the chunk may be a Node Buffer, whose slice() is a
          // view, on a larger transport buffer that we must not pin).
          frames.push(new Uint8Array(chunk.subarray(offset, offset + length)))
          offset += length
          continue
        }
        this.bodyLength = length
      }
      const take = Math.min(this.bodyLength - this.filled, chunk.byteLength - offset)
      if (this.filled + take > this.body.byteLength) {
        const grown = new Uint8Array(Math.min(this.bodyLength, Math.max(2 * this.body.byteLength, this.filled + take, MIN_GROWTH)))
        grown.set(this.body.subarray(0, this.filled))
        this.body = grown
      }
      this.body.set(chunk.subarray(offset, offset + take), this.filled)
      this.filled += take
      offset += take
      if (this.filled === this.bodyLength) {
        frames.push(this.body)
        this.bodyLength = undefined
        this.body = EMPTY
        this.filled = 0
      }
    }
    return frames
  }

  private fail(message: string): never {
    this.failed = new DecodeError(message)
    throw this.failed
  }
}
