/**
 * Guard for untrusted Automerge bytes (deltas and snapshot payloads), run
 * before Automerge sees them.
 *
 * Automerge parses its own format strictly in `load` and `applyChanges`
 * (every chunk carries a SHA-256-based checksum), but it is lenient where a
 * replica must not be: `load(empty)` gives an empty document, and
 * `loadIncremental` applies the valid chunks before a broken one and
 * silently ignores the rest (a partial apply). So this guard:
 * - rejects empty input and input over `limits.maxBytes`;
 * - walks the chunk framing (magic `85 6f 4a 83`, 4 checksum bytes, chunk
 *   type, LEB128 length, payload) and requires the chunks to tile the input
 *   exactly, each being a document (0) or change (1) chunk, so that the
 *   replica can hand change chunks to the atomic `applyChanges` and check
 *   document chunks with a strict `load` first;
 * - verifies the checksum of every change chunk (the first 4 bytes of the
 *   SHA-256 of type, length and payload): Automerge 3.5's `applyChanges`
 *   does not, and accepts most bit flips in a change as another, valid
 *   change (measured: 108 of 306 single-bit flips of a 102-byte change).
 *   Document chunks are checked by `load` itself;
 * - rejects compressed change chunks (2): their checksum covers the
 *   uncompressed bytes, and Automerge 3 never produces them for deltas.
 * The chunk contents (columns, checksums, causal order) are Automerge's own
 * parser's job: the replica turns any error it raises into DecodeError.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { DecodeError } from '../errors.ts'
import type { DocumentLimits } from './options.ts'

/** Automerge chunk types this replica accepts. */
export const AutomergeChunkType = { document: 0, change: 1 } as const

/** One framed chunk of an Automerge byte stream. */
export interface AutomergeChunk {
  readonly type: 0 | 1
  /** The whole chunk, header included (a view into the input). */
  readonly bytes: Uint8Array
  /** Where the payload starts within `bytes` (after magic, checksum, type and length). */
  readonly payloadOffset: number
  /** For a change chunk: its hash (SHA-256 of type, length and payload), as Automerge names changes. */
  readonly hash?: Uint8Array
}

const MAGIC = [0x85, 0x6f, 0x4a, 0x83]
const HEADER_BYTES = 4 + 4 + 1

/**
 * Reads an unsigned LEB128 number of at most `maxBytes` bytes at `pos`:
 * `[value, position after it]`, or undefined when the input ends first or
 * the number is longer.
 */
export function readUleb(bytes: Uint8Array, pos: number, maxBytes = 8): [number, number] | undefined {
  let value = 0
  let mult = 1
  for (let i = 0; i < maxBytes && pos < bytes.length; i++) {
    const byte = bytes[pos++]
    value += (byte & 0x7f) * mult
    if (byte < 0x80) return [value, pos]
    mult *= 128
  }
  return undefined
}

/** Splits Automerge bytes into chunks, checking the framing. Throws {@link DecodeError}. */
export function splitAutomergeChunks(bytes: Uint8Array, limits: DocumentLimits, what = 'automerge data'): AutomergeChunk[] {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError(`${what}: expected a Uint8Array`)
  if (bytes.length === 0) throw new DecodeError(`${what}: empty input`)
  if (bytes.length > limits.maxBytes) throw new DecodeError(`${what}: ${bytes.length} bytes exceeds the limit of ${limits.maxBytes}`)
  const chunks: AutomergeChunk[] = []
  let pos = 0
  while (pos < bytes.length) {
    const start = pos
    if (bytes.length - pos < HEADER_BYTES + 1) throw new DecodeError(`${what}: truncated chunk header at offset ${pos}`)
    for (let i = 0; i < 4; i++) {
      if (bytes[pos + i] !== MAGIC[i]) throw new DecodeError(`${what}: no Automerge chunk at offset ${pos} (bad magic bytes)`)
    }
    pos += 8
    const type = bytes[pos++]
    if (type > 1) throw new DecodeError(`${what}: unsupported chunk type ${type} at offset ${start}`)
    const read = readUleb(bytes, pos)
    if (read === undefined) {
      throw new DecodeError(`${what}: ${pos + 8 > bytes.length ? 'truncated' : 'too long a'} chunk length at offset ${pos}`)
    }
    const [length] = read
    pos = read[1]
    if (length > bytes.length - pos) throw new DecodeError(`${what}: chunk of ${length} bytes at offset ${start} exceeds the ${bytes.length - pos} remaining`)
    const payloadOffset = pos - start
    pos += length
    if (type === 1) {
      const hash = sha256(bytes.subarray(start + 8, pos))
      for (let i = 0; i < 4; i++) {
        if (hash[i] !== bytes[start + 4 + i]) throw new DecodeError(`${what}: bad checksum of the change chunk at offset ${start}`)
      }
      chunks.push({ type: 1, bytes: bytes.subarray(start, pos), payloadOffset, hash })
    } else {
      chunks.push({ type: 0, bytes: bytes.subarray(start, pos), payloadOffset })
    }
  }
  return chunks
}
