/**
 * The digests of stored values in Node: SHA-256 from node:crypto and
 * CRC-32 from node:zlib (both native). A bundler building for the browser
 * takes persistence/browser/digest.ts instead (package.json `browser`):
 * the same functions in JavaScript. test/persistence/digest.test.ts checks
 * that both give the same bytes.
 */
import * as crypto from 'node:crypto'
import { crc32 } from 'node:zlib'

/** One-shot `crypto.hash` (Node >= 20.12): no Hash object per call. */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Uint8Array }).hash

/** SHA-256 of `bytes`. */
export function sha256(bytes: Uint8Array): Uint8Array {
  const digest = oneShot ? oneShot('sha256', bytes, 'buffer') : crypto.createHash('sha256').update(bytes).digest()
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength)
}

/** CRC-32 (IEEE) of `bytes`, as an unsigned 32-bit integer. */
export function checksum(bytes: Uint8Array): number {
  return crc32(bytes) >>> 0
}
