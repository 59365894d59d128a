/**
 * Path keys to LevelDB byte keys, order-preserving.
 *
 * Each segment is written as its UTF-8 bytes with `0x00 -> 0x01 0x01` and
 * `0x01 -> 0x01 0x02`, then a `0x00` terminator. Byte order of the encoded
 * keys is then exactly segment-by-segment order of the paths, a path sorts
 * before the paths it is a prefix of, and every key under a prefix `P` lies in
 * `(enc(P), enc(P) + 0xFF)`. A UTF-8 encoding never contains `0xFF`, so keys
 * starting with `0xFF` are reserved for the adapter itself.
 */
import { isWellFormed } from '../../../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../../../crdt/errors.ts'
import type { RangeOptions, StorageKey } from '../storage.ts'

const textEncoder = new TextEncoder()
const textDecoder = new TextDecoder('utf-8', { fatal: true })

/** Encodes a path key to bytes. */
export function encodeKey(key: StorageKey): Uint8Array {
  // Fast path: printable ASCII segments (every key the store writes but the
  // names' own characters) are their own bytes; no escaping, one allocation.
  let length = 0
  let ascii = true
  for (let i = 0; i < key.length && ascii; i++) {
    const segment = key[i]
    if (typeof segment !== 'string') {
      ascii = false
      break
    }
    for (let j = 0; j < segment.length; j++) {
      const code = segment.charCodeAt(j)
      if (code < 0x02 || code > 0x7f) {
        ascii = false
        break
      }
    }
    length += segment.length + 1
  }
  if (ascii) {
    const out = new Uint8Array(length)
    let offset = 0
    for (const segment of key) {
      for (let j = 0; j < segment.length; j++) out[offset++] = segment.charCodeAt(j)
      offset++ // the terminator stays 0x00
    }
    return out
  }
  let simple = true
  for (const segment of key) {
    // Two names differing in a lone surrogate would share one key (both encode as U+FFFD).
    if (typeof segment === 'string' && !isWellFormed(segment)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'storage key: a segment is not well-formed Unicode (it has a lone surrogate)')
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the separator bytes are control characters
    if (typeof segment !== 'string' || /[\u0000\u0001]/.test(segment)) {
      simple = false
      break
    }
  }
  if (simple) {
    const encoded = key.map((segment) => textEncoder.encode(segment))
    const out = new Uint8Array(encoded.reduce((sum, bytes) => sum + bytes.length + 1, 0))
    let offset = 0
    for (const bytes of encoded) {
      out.set(bytes, offset)
      offset += bytes.length + 1 // the terminator stays 0x00
    }
    return out
  }
  const parts: number[] = []
  for (const segment of key) {
    if (typeof segment !== 'string') throw new TypeError('storage key segments must be strings')
    for (const byte of textEncoder.encode(segment)) {
      if (byte === 0x00) parts.push(0x01, 0x01)
      else if (byte === 0x01) parts.push(0x01, 0x02)
      else parts.push(byte)
    }
    parts.push(0x00)
  }
  return Uint8Array.from(parts)
}

/** Longest ASCII segment decoded char by char (longer ones go through the TextDecoder). */
const SHORT_SEGMENT = 64

/** Decodes bytes written by {@link encodeKey}. */
export function decodeKey(bytes: Uint8Array): string[] {
  // Fast path: no escapes (every key the store writes but names with U+0000 or U+0001), each segment read from
  // the bytes in place; a short ASCII one char by char (a TextDecoder call costs more than such a segment).
  const segments: string[] = []
  let start = 0
  let ascii = true
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === 0x00) {
      segments.push(ascii && i - start <= SHORT_SEGMENT ? asciiSegment(bytes, start, i) : utf8Segment(bytes.subarray(start, i)))
      start = i + 1
      ascii = true
    } else if (byte === 0x01) return decodeEscapedKey(bytes)
    else if (byte >= 0x80) ascii = false
  }
  if (start < bytes.length) throw new DecodeError('storage key: unterminated segment')
  return segments
}

/** A segment's UTF-8; `CONCORD_DECODE_ERROR` when it is not UTF-8 (a damaged key: the encoder writes only well-formed text). */
function utf8Segment(bytes: Uint8Array): string {
  try {
    return textDecoder.decode(bytes)
  } catch (error) {
    throw new DecodeError('storage key: a segment is not UTF-8', { cause: error })
  }
}

function asciiSegment(bytes: Uint8Array, start: number, end: number): string {
  let out = ''
  for (let i = start; i < end; i++) out += String.fromCharCode(bytes[i])
  return out
}

/** {@link decodeKey} of a key with escaped bytes. */
function decodeEscapedKey(bytes: Uint8Array): string[] {
  const segments: string[] = []
  let current: number[] = []
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === 0x00) {
      segments.push(utf8Segment(Uint8Array.from(current)))
      current = []
    } else if (byte === 0x01) {
      const next = bytes[++i]
      if (next === 0x01) current.push(0x00)
      else if (next === 0x02) current.push(0x01)
      else throw new DecodeError('storage key: bad escape')
    } else {
      current.push(byte)
    }
  }
  if (current.length > 0) throw new DecodeError('storage key: unterminated segment')
  return segments
}

/** Compares two byte strings (memcmp order). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i]
  return a.length - b.length
}

function concat(a: Uint8Array, b: number): Uint8Array {
  const out = new Uint8Array(a.length + 1)
  out.set(a)
  out[a.length] = b
  return out
}

/** Level range bounds (`gt|gte`, `lt|lte`) for a {@link RangeOptions}. */
export interface ByteRange {
  gt?: Uint8Array
  gte?: Uint8Array
  lt?: Uint8Array
  lte?: Uint8Array
}

/** Turns a prefix range plus optional key bounds into one byte range. */
export function rangeToBytes(range: RangeOptions): ByteRange {
  const prefix = encodeKey(range.prefix)
  let lower = { key: prefix, inclusive: false }
  let upper = { key: concat(prefix, 0xff), inclusive: false }
  const tighterLower = (key: Uint8Array, inclusive: boolean): void => {
    const order = compareBytes(key, lower.key)
    if (order > 0 || (order === 0 && !inclusive)) lower = { key, inclusive }
  }
  const tighterUpper = (key: Uint8Array, inclusive: boolean): void => {
    const order = compareBytes(key, upper.key)
    if (order < 0 || (order === 0 && !inclusive)) upper = { key, inclusive }
  }
  if (range.gt) tighterLower(encodeKey(range.gt), false)
  if (range.gte) tighterLower(encodeKey(range.gte), true)
  if (range.lt) tighterUpper(encodeKey(range.lt), false)
  if (range.lte) tighterUpper(encodeKey(range.lte), true)
  const out: ByteRange = {}
  if (lower.inclusive) out.gte = lower.key
  else out.gt = lower.key
  if (upper.inclusive) out.lte = upper.key
  else out.lt = upper.key
  return out
}
