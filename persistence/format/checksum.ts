/**
 * Checksums and hashes of stored values: CRC-32 guards every value
 * against torn writes and flipped bits; SHA-256 chains the log records of a
 * name (tamper evidence). The digests themselves are digest.ts (native in
 * Node; persistence/browser/digest.ts in a browser bundle).
 */
import type { Encoder } from '../../crdt/codec.ts'
import { appendCrc32, putCrc32, stripCrc32 } from '../../crdt/types/crc32.ts'
import { checksum, sha256 } from './digest.ts'

export { checksum, sha256 }

/** Length of a record hash in bytes (SHA-256). */
export const HASH_BYTES = 32

/** The hash before the first record of every name: 32 zero bytes. */
export const ZERO_HASH: Uint8Array = new Uint8Array(HASH_BYTES)

/** Appends the CRC-32 of `body` to it (4 bytes, big-endian). */
export function sealWithChecksum(body: Uint8Array): Uint8Array {
  return appendCrc32(body, checksum)
}

const CRC_PLACE = new Uint8Array(4)
/** Unused bytes a sealed value's buffer may have beyond it (see {@link sealEncoder}). */
const MAX_SLACK = 32

/**
 * What `encoder` holds, sealed as {@link sealWithChecksum} seals it (the same
 * bytes) without a copy: the CRC-32 is written in place, and the value is a
 * view of the encoder's buffer when that has at most a few bytes more (size
 * it to what it holds). With `from`, the checksum still covers every byte
 * written, but the value starts there (what comes before is covered, not
 * stored: a key's name). `encoder` is done with, or, with `copy` (a
 * scratch encoder reused), the value is always a copy.
 */
export function sealEncoder(encoder: Encoder, from = 0, copy = false): Uint8Array {
  const framed = encoder.writeRaw(CRC_PLACE).written()
  const at = framed.length - 4
  putCrc32(framed, at, framed.subarray(0, at), checksum)
  // A view of the encoder's buffer when it holds little else (no copy); else a copy, so a stored value never drags a grown or scratch buffer.
  const out = framed.subarray(from)
  return copy || out.buffer.byteLength - out.length > MAX_SLACK ? out.slice() : out
}

/** The body of a sealed value, or `undefined` if it is too short or its checksum fails. */
export function openChecksummed(sealed: Uint8Array): Uint8Array | undefined {
  if (!(sealed instanceof Uint8Array) || sealed.length < 5) return undefined
  return stripCrc32(sealed, checksum)
}

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0')
  return out
}
