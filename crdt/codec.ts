/**
 * Binary codec primitives: a growable {@link Encoder} and a bounds-checked
 * {@link Decoder}. Pure (Uint8Array, DataView, TextEncoder only) so crdt/ and
 * sync/ stay usable in a browser.
 *
 * Every read checks bounds and throws {@link DecodeError}: a length prefix can
 * never make the decoder allocate more than the bytes that remain, so a few
 * hostile bytes cannot claim a huge collection.
 */
import { DecodeError } from './errors.ts'

const textEncoder = new TextEncoder()

const nativeIsWellFormed = (String.prototype as { isWellFormed?: () => boolean }).isWellFormed
/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * True when `value` is well-formed Unicode (no lone surrogate), so that its
 * UTF-8 encoding gives it back. `'x\uD800'` and `'x\uDBFF'` are not: both
 * encode as `'x\uFFFD'`.
 */
export function isWellFormed(value: string): boolean {
  return nativeIsWellFormed !== undefined ? nativeIsWellFormed.call(value) : !LONE_SURROGATE.test(value)
}
const textDecoder = new TextDecoder('utf-8', { fatal: true })

/** Writes values into a growing byte buffer. */
export class Encoder {
  private buffer: Uint8Array
  /** For floats only, made on first use: a DataView costs more to create than the rest of an encoder (issue 19). */
  private view: DataView | undefined
  private length = 0

  constructor(initialCapacity = 64) {
    this.buffer = new Uint8Array(initialCapacity)
  }

  /** Number of bytes written so far. */
  get byteLength(): number {
    return this.length
  }

  private ensure(extra: number): void {
    const needed = this.length + extra
    if (needed <= this.buffer.length) return
    let capacity = this.buffer.length * 2
    while (capacity < needed) capacity *= 2
    const next = new Uint8Array(capacity)
    next.set(this.buffer.subarray(0, this.length))
    this.buffer = next
    this.view = undefined
  }

  /** One byte, 0..255. */
  writeUint8(value: number): this {
    this.ensure(1)
    this.buffer[this.length++] = value & 0xff
    return this
  }

  /** Unsigned LEB128 integer, 0..2^53-1. */
  writeVarUint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`writeVarUint: ${value} is not a safe unsigned integer`)
    this.ensure(8)
    while (value > 0x7f) {
      this.buffer[this.length++] = (value % 0x80) | 0x80
      value = Math.floor(value / 0x80)
    }
    this.buffer[this.length++] = value
    return this
  }

  /** Signed integer (zigzag + LEB128), -(2^52)..2^52. */
  writeVarInt(value: number): this {
    if (!Number.isSafeInteger(value)) throw new RangeError(`writeVarInt: ${value} is not a safe integer`)
    return this.writeVarUint(value >= 0 ? value * 2 : -value * 2 - 1)
  }

  /** IEEE 754 double, big-endian. */
  writeFloat64(value: number): this {
    this.ensure(8)
    this.view ??= new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.byteLength)
    this.view.setFloat64(this.length, value)
    this.length += 8
    return this
  }

  /** Raw bytes, no length prefix. */
  writeRaw(bytes: Uint8Array): this {
    this.ensure(bytes.length)
    this.buffer.set(bytes, this.length)
    this.length += bytes.length
    return this
  }

  /** Length-prefixed bytes. */
  writeBytes(bytes: Uint8Array): this {
    this.writeVarUint(bytes.length)
    return this.writeRaw(bytes)
  }

  /** Length-prefixed UTF-8 string; an ASCII one is written in place (no intermediate array). */
  writeString(value: string): this {
    const length = value.length
    for (let i = 0; i < length; i++) {
      if (value.charCodeAt(i) > 0x7f) return this.writeBytes(textEncoder.encode(value))
    }
    this.writeVarUint(length)
    this.ensure(length)
    const buffer = this.buffer
    let at = this.length
    for (let i = 0; i < length; i++) buffer[at++] = value.charCodeAt(i)
    this.length = at
    return this
  }

  /** A copy of the bytes written. */
  finish(): Uint8Array {
    return this.buffer.slice(0, this.length)
  }

  /**
   * The bytes written, as a view of the encoder's buffer (no copy: a typed
   * array over 64 bytes costs an allocation outside the heap): for an
   * encoder done with, or for bytes read before the next write or
   * {@link reset}.
   */
  written(): Uint8Array {
    return this.buffer.subarray(0, this.length)
  }

  /** Forgets the bytes written, keeping the buffer (a scratch encoder reused; see {@link written}). */
  reset(): this {
    this.length = 0
    return this
  }
}

/** Reads values written by {@link Encoder}; every read is bounds-checked. */
export class Decoder {
  /** For floats only, made on first use (see {@link Encoder}). */
  private view: DataView | undefined
  private offset = 0

  constructor(private readonly bytes: Uint8Array) {}

  /** Bytes not yet read. */
  get remaining(): number {
    return this.bytes.length - this.offset
  }

  /** Current read position. */
  get position(): number {
    return this.offset
  }

  private need(count: number, what: string): void {
    if (count > this.bytes.length - this.offset) {
      throw new DecodeError(`truncated input: ${what} needs ${count} bytes at offset ${this.offset}, ${this.remaining} remain`)
    }
  }

  /** One byte. */
  readUint8(): number {
    this.need(1, 'uint8')
    return this.bytes[this.offset++]
  }

  /** Unsigned LEB128 integer; rejects values over 2^53-1 and overlong encodings. */
  readVarUint(): number {
    let result = 0
    let multiplier = 1
    for (let i = 0; i < 8; i++) {
      this.need(1, 'varuint')
      const byte = this.bytes[this.offset++]
      result += (byte & 0x7f) * multiplier
      if (byte < 0x80) {
        if (i > 0 && byte === 0) throw new DecodeError('overlong varuint encoding')
        if (!Number.isSafeInteger(result)) throw new DecodeError('varuint exceeds 2^53-1')
        return result
      }
      multiplier *= 0x80
    }
    throw new DecodeError('varuint longer than 8 bytes')
  }

  /** Signed zigzag integer. */
  readVarInt(): number {
    const zigzag = this.readVarUint()
    return zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2
  }

  /** IEEE 754 double, big-endian. */
  readFloat64(): number {
    this.need(8, 'float64')
    this.view ??= new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength)
    const value = this.view.getFloat64(this.offset)
    this.offset += 8
    return value
  }

  /** `count` raw bytes (a view, not a copy). */
  readRaw(count: number): Uint8Array {
    this.need(count, 'raw bytes')
    const out = this.bytes.subarray(this.offset, this.offset + count)
    this.offset += count
    return out
  }

  /**
   * Length-prefixed bytes (a view, not a copy). With `maxBytes`, a longer
   * length is a DecodeError before anything is read.
   */
  readBytes(maxBytes = Number.MAX_SAFE_INTEGER): Uint8Array {
    const length = this.readVarUint()
    if (length > maxBytes) throw new DecodeError(`a length of ${length} bytes is over the limit of ${maxBytes} at offset ${this.offset}`)
    return this.readRaw(length)
  }

  /**
   * Length-prefixed UTF-8 string; invalid UTF-8 is a DecodeError. With
   * `maxBytes`, a longer string is refused before it is decoded.
   */
  readString(maxBytes = Number.MAX_SAFE_INTEGER): string {
    const raw = this.readBytes(maxBytes)
    try {
      return textDecoder.decode(raw)
    } catch (cause) {
      throw new DecodeError('invalid UTF-8 in string', { cause })
    }
  }

  /**
   * A count of items that each take at least `minItemBytes` bytes: rejected
   * when the remaining input could not hold them, so a hostile count cannot
   * drive a huge loop or allocation.
   */
  readCount(minItemBytes = 1): number {
    if (!(minItemBytes >= 1)) throw new RangeError('readCount: every item takes at least one byte')
    const count = this.readVarUint()
    if (count * minItemBytes > this.remaining) {
      throw new DecodeError(`count ${count} cannot fit in the ${this.remaining} remaining bytes`)
    }
    return count
  }

  /** Reads and checks a format version byte. */
  readVersion(expected: number, format: string): number {
    const version = this.readUint8()
    if (version !== expected) throw new DecodeError(`${format}: unsupported format version ${version} (expected ${expected})`)
    return version
  }

  /** Throws unless every byte was consumed. */
  end(format: string): void {
    if (this.offset !== this.bytes.length) {
      throw new DecodeError(`${format}: ${this.bytes.length - this.offset} trailing bytes`)
    }
  }
}

/**
 * Runs a whole-buffer decode, turning any non-Concord exception (a RangeError
 * from a library, a JSON SyntaxError) into a {@link DecodeError}, so decoders
 * only ever throw typed errors.
 */
export function decodeGuarded<T>(format: string, bytes: Uint8Array, read: (decoder: Decoder) => T): T {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError(`${format}: expected a Uint8Array`)
  try {
    const decoder = new Decoder(bytes)
    const value = read(decoder)
    decoder.end(format)
    return value
  } catch (error) {
    if (error instanceof DecodeError) throw error
    throw new DecodeError(`${format}: ${(error as Error)?.message ?? String(error)}`, { cause: error })
  }
}

/** Compares two byte arrays for equality. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
