/**
 * Checksums and hashes of stored values: CRC-32 (zlib) guards every value
 * against torn writes and flipped bits; SHA-256 chains the log records of a
 * name (tamper evidence).
 */
import * as crypto from 'node:crypto'
import { crc32 } from 'node:zlib'
import { appendCrc32, stripCrc32 } from '../crdt/types/crc32.ts'

/** Length of a record hash in bytes (SHA-256). */
export const HASH_BYTES = 32

/** The hash before the first record of every name: 32 zero bytes. */
export const ZERO_HASH: Uint8Array = new Uint8Array(HASH_BYTES)

/** One-shot `crypto.hash` (Node >= 20.12): no Hash object per call. */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Uint8Array }).hash

/** SHA-256 of `bytes`. */
export function sha256(bytes: Uint8Array): Uint8Array {
  const digest = oneShot ? oneShot('sha256', bytes, 'buffer') : crypto.createHash('sha256').update(bytes).digest()
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength)
}

/** CRC-32 of `bytes`, as an unsigned 32-bit integer. */
export function checksum(bytes: Uint8Array): number {
  return crc32(bytes) >>> 0
}

/** Appends the CRC-32 of `body` to it (4 bytes, big-endian). */
export function sealWithChecksum(body: Uint8Array): Uint8Array {
  return appendCrc32(body, checksum)
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
