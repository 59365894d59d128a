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
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'binary') => string }).hash

/** SHA-256 of `bytes`. */
export function sha256(bytes: Uint8Array): Uint8Array {
  if (oneShot) {
    // As a 'binary' (latin1) string, one char per byte, copied into a 32-byte array in the heap: a Buffer output
    // gets an ArrayBuffer of its own, which costs more than the hash (about 1 us against 0.45 us, 2026-12-02).
    const digest = oneShot('sha256', bytes, 'binary')
    const out = new Uint8Array(32)
    for (let i = 0; i < 32; i++) out[i] = digest.charCodeAt(i)
    return out
  }
  const digest = crypto.createHash('sha256').update(bytes).digest()
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength)
}

/** CRC-32 (IEEE) of `bytes`, as an unsigned 32-bit integer. */
export function checksum(bytes: Uint8Array): number {
  return crc32(bytes) >>> 0
}
