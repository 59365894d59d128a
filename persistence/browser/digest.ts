/**
 * The digests of stored values in a browser: SHA-256 from @noble/hashes
 * (synchronous, as the log needs it; WebCrypto's digest is asynchronous)
 * and the CRC-32 of crdt/. Same exports and results as persistence/format/digest.ts,
 * which a bundler building for the browser replaces with this module.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js'
import { crc32 } from '../../crdt/types/crc32.ts'

/** SHA-256 of `bytes`. */
export function sha256(bytes: Uint8Array): Uint8Array {
  return nobleSha256(bytes)
}

/** CRC-32 (IEEE) of `bytes`, as an unsigned 32-bit integer. */
export function checksum(bytes: Uint8Array): number {
  return crc32(bytes)
}
