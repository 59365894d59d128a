/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), pure TypeScript so
 * crdt/ stays browser-safe. Native states, deltas and versions end with it,
 * so a flipped bit or a truncation is rejected instead of decoding into a
 * different, valid-looking delta that reuses a dot.
 */

const TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** The CRC-32 of `bytes` (unsigned 32-bit). */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/**
 * `bytes` followed by their CRC-32, big-endian. `crc` computes it (default
 * this module's; persistence passes Node's native `zlib.crc32`, the same
 * function, faster).
 */
export function appendCrc32(bytes: Uint8Array, crc: (bytes: Uint8Array) => number = crc32): Uint8Array {
  const out = new Uint8Array(bytes.length + 4)
  out.set(bytes)
  putCrc32(out, bytes.length, bytes, crc)
  return out
}

/** Writes the CRC-32 of `body` into `out` at `at`, big-endian (`crc` as in {@link appendCrc32}). */
export function putCrc32(out: Uint8Array, at: number, body: Uint8Array, crc: (bytes: Uint8Array) => number = crc32): void {
  // Big-endian by hand: a DataView per value costs more than the rest (issue 19).
  const value = crc(body) >>> 0
  out[at] = value >>> 24
  out[at + 1] = (value >>> 16) & 0xff
  out[at + 2] = (value >>> 8) & 0xff
  out[at + 3] = value & 0xff
}

/** The bytes before a trailing CRC-32 when it matches, else undefined (`crc` as in {@link appendCrc32}). */
export function stripCrc32(bytes: Uint8Array, crc: (bytes: Uint8Array) => number = crc32): Uint8Array | undefined {
  if (bytes.length < 4) return undefined
  const body = bytes.subarray(0, bytes.length - 4)
  const at = bytes.length - 4
  const stored = ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0
  return stored === crc(body) >>> 0 ? body : undefined
}
