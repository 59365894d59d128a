/**
 * The seal's formats (FORMAT.md, "Seal"): the seal file beside the
 * database, the seal key and the recorded losses. What the seal does is
 * persistence/lifecycle/seal.ts.
 */
import { deflateSync, inflateSync } from 'fflate'
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { openChecksummed, sealWithChecksum } from './checksum.ts'
import { compareCodePoints } from './keys.ts'

/** The seal file's name, in the store's folder (LevelDB ignores files it does not know). */
export const SEAL_FILE = 'concord-seal'
/** Format version of the seal key and the losses value (and of the seal file before chunks). */
export const SEAL_VERSION = 1
/** Format version of the seal file: its list of names in deflated chunks. */
export const SEAL_FILE_VERSION = 2
/** Names a chunk of the seal file holds when written whole (a patched chunk holds up to twice as many before it is split). */
export const SEAL_CHUNK_NAMES = 4096
/** Most bytes the seal's list may inflate to (a file that claims more is damaged). */
const MAX_SEAL_BYTES = 1 << 30
/** Most bytes one entry of the list takes (a name of 1,024 UTF-16 units as UTF-8, its length and a seq). */
const MAX_ENTRY_BYTES = 3 * 1024 + 5 + 8

/** A name at a clean close and its last seq (an archived one: as archived). */
export interface SealEntry {
  readonly name: string
  readonly lastSeq: number
}

/**
 * A run of the seal file's list, its names in key (code point) order:
 * `(string name | varuint lastSeq)*` of `rawBytes` bytes, deflated. A close
 * rewrites only the chunks its written names fall in.
 */
export interface SealChunk {
  /** The name of its first entry. */
  readonly first: string
  readonly count: number
  readonly rawBytes: number
  readonly packed: Uint8Array
}

/** Every name at a clean close (see {@link SealChunk}). */
export interface SealFile {
  readonly agentId: string
  readonly generation: number
  readonly closedAt: number
  readonly chunks: readonly SealChunk[]
}

/** Entries in the list's order (code point order of names). */
export function sortEntries(entries: readonly SealEntry[]): SealEntry[] {
  return [...entries].sort((a, b) => compareCodePoints(a.name, b.name))
}

/** Raw DEFLATE of bytes (fflate's by default; Node's zlib is about twice as fast: persistence/lifecycle/seal-files.ts). */
export type Deflate = (raw: Uint8Array) => Uint8Array

const fflateDeflate: Deflate = (raw) => deflateSync(raw, { level: 6 })

/** Sorted entries (see {@link sortEntries}) as chunks of at most `size` names. */
export function packChunks(entries: readonly SealEntry[], size = SEAL_CHUNK_NAMES, deflate: Deflate = fflateDeflate): SealChunk[] {
  const chunks: SealChunk[] = []
  for (let start = 0; start < entries.length; start += size) {
    const run = entries.slice(start, start + size)
    const e = new Encoder(run.length * 24)
    for (const { name, lastSeq } of run) e.writeString(name).writeVarUint(lastSeq)
    const raw = e.finish()
    chunks.push({ first: run[0].name, count: run.length, rawBytes: raw.length, packed: deflate(raw) })
  }
  return chunks
}

/** The entries of a chunk; `CONCORD_CORRUPT_RECORD` when they do not decode as the chunk says. */
export function unpackChunk(chunk: SealChunk): SealEntry[] {
  let raw: Uint8Array
  try {
    // Inflated into a buffer of the size the chunk states, which was checked against its count: a file cannot make it allocate more.
    raw = inflateSync(chunk.packed, { out: new Uint8Array(chunk.rawBytes) })
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `seal file: a chunk does not inflate (${(error as Error).message})`, { cause: error })
  }
  const entries: SealEntry[] = []
  try {
    if (raw.length !== chunk.rawBytes) throw new Error(`a chunk inflates to ${raw.length} bytes, not ${chunk.rawBytes}`)
    const d = new Decoder(raw)
    for (let i = 0; i < chunk.count; i++) {
      const entry = { name: d.readString(), lastSeq: d.readVarUint() }
      const before = i === 0 ? undefined : entries[i - 1].name
      if (i === 0 ? entry.name !== chunk.first : compareCodePoints(before!, entry.name) > 0) throw new Error('a chunk is out of order')
      entries.push(entry)
    }
    d.end('seal chunk')
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `seal file: ${(error as Error).message}`, { cause: error })
  }
  return entries
}

/** Every entry of the file, in order. */
export function sealEntries(file: SealFile): SealEntry[] {
  return file.chunks.flatMap(unpackChunk)
}

/**
 * The chunks with `updates` applied (a name's last seq; undefined: it is no
 * longer held): each update goes into the chunk its name falls in (the
 * last whose first name is not after it), and only those chunks are
 * inflated and written again (split past twice {@link SEAL_CHUNK_NAMES};
 * an emptied one is dropped). The others are kept as they are.
 */
export function patchChunks(chunks: readonly SealChunk[], updates: ReadonlyMap<string, number | undefined>, deflate: Deflate = fflateDeflate): SealChunk[] {
  if (updates.size === 0) return [...chunks]
  const byChunk = new Map<number, string[]>()
  for (const name of updates.keys()) {
    // The last chunk whose first name is at or before `name` (the first chunk for a name before every chunk).
    let low = 0
    let high = chunks.length - 1
    while (low < high) {
      const middle = (low + high + 1) >> 1
      if (compareCodePoints(chunks[middle].first, name) <= 0) low = middle
      else high = middle - 1
    }
    const names = byChunk.get(low)
    if (names) names.push(name)
    else byChunk.set(low, [name])
  }
  const out: SealChunk[] = []
  for (let at = 0; at < Math.max(chunks.length, 1); at++) {
    const names = byChunk.get(at)
    if (names === undefined) {
      if (at < chunks.length) out.push(chunks[at])
      continue
    }
    names.sort(compareCodePoints)
    const entries: SealEntry[] = []
    let next = 0
    const insertBefore = (name: string | undefined): void => {
      while (next < names.length && (name === undefined || compareCodePoints(names[next], name) < 0)) {
        const lastSeq = updates.get(names[next++])
        if (lastSeq !== undefined) entries.push({ name: names[next - 1], lastSeq })
      }
    }
    for (const entry of at < chunks.length ? unpackChunk(chunks[at]) : []) {
      insertBefore(entry.name)
      if (updates.has(entry.name)) continue
      entries.push(entry)
    }
    // Updated names held in the chunk: their new entries, in order, then any after its last entry.
    insertBefore(undefined)
    if (entries.length === 0) continue
    const size = entries.length > 2 * SEAL_CHUNK_NAMES ? SEAL_CHUNK_NAMES : entries.length
    out.push(...packChunks(entries, size, deflate))
  }
  return out
}

/** The seal key: the generation of the last open or close, and which. */
export interface SealKey {
  readonly generation: number
  readonly closed: boolean
}

/** Records acknowledged before a clean close that the store no longer holds. */
export interface Loss {
  readonly name: string
  /** First missing seq (1: the whole name is missing). */
  readonly fromSeq: number
  /** Last seq at the clean close. */
  readonly toSeq: number
  /** When the close was (ms). */
  readonly closedAt: number
  /** When the loss was found (ms). */
  readonly foundAt: number
}

function decodeWith<T>(bytes: Uint8Array, what: string, read: (d: Decoder) => T): T {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `${what}: checksum mismatch or truncated`)
  if (body[0] > SEAL_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `${what}: format version ${body[0]} is newer than this code`)
  try {
    const d = new Decoder(body)
    d.readVersion(SEAL_VERSION, what)
    const value = read(d)
    d.end(what)
    return value
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `${what}: ${(error as Error).message}`, { cause: error })
  }
}

/**
 * `u8 2 | string agentId | varuint generation | varuint closedAt | count,
 * (string first | varuint names | varuint rawBytes | bytes deflated)* | u32 crc`
 */
export function encodeSealFile(seal: SealFile): Uint8Array {
  let size = 64 + seal.agentId.length * 3
  for (const chunk of seal.chunks) size += chunk.packed.length + chunk.first.length * 3 + 16
  const e = new Encoder(size).writeUint8(SEAL_FILE_VERSION).writeString(seal.agentId).writeVarUint(seal.generation).writeVarUint(seal.closedAt)
  e.writeVarUint(seal.chunks.length)
  for (const chunk of seal.chunks) e.writeString(chunk.first).writeVarUint(chunk.count).writeVarUint(chunk.rawBytes).writeBytes(chunk.packed)
  return sealWithChecksum(e.finish())
}

/** The seal file as written before chunks (version 1; gzipped as a whole by seal-files.ts): read still, and written by tests. */
export function encodeSealFileV1(seal: Omit<SealFile, 'chunks'> & { readonly names: readonly SealEntry[] }): Uint8Array {
  const e = new Encoder().writeUint8(SEAL_VERSION).writeString(seal.agentId).writeVarUint(seal.generation).writeVarUint(seal.closedAt)
  e.writeVarUint(seal.names.length)
  for (const { name, lastSeq } of seal.names) e.writeString(name).writeVarUint(lastSeq)
  return sealWithChecksum(e.finish())
}

/**
 * Decodes a seal file: its header and its chunks (not inflated). A file of
 * version 1 has its list sorted into chunks, unless `names` is false (the
 * header only: an open that finds the seal intact reads no more).
 */
export function decodeSealFile(bytes: Uint8Array, options: { names?: boolean } = {}): SealFile {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'seal file: checksum mismatch or truncated')
  const version = body[0]
  if (version > SEAL_FILE_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `seal file: format version ${version} is newer than this code`)
  try {
    const d = new Decoder(body)
    d.readUint8()
    if (version !== SEAL_VERSION && version !== SEAL_FILE_VERSION) throw new Error(`unknown format version ${version}`)
    const agentId = d.readString()
    const generation = d.readVarUint()
    const closedAt = d.readVarUint()
    const chunks: SealChunk[] = []
    if (version === SEAL_VERSION) {
      if (options.names === false) return { agentId, generation, closedAt, chunks }
      const count = d.readCount(2)
      const names: SealEntry[] = []
      for (let i = 0; i < count; i++) names.push({ name: d.readString(), lastSeq: d.readVarUint() })
      d.end('seal file')
      return { agentId, generation, closedAt, chunks: packChunks(sortEntries(names)) }
    }
    const count = d.readCount(4)
    let inflated = 0
    for (let i = 0; i < count; i++) {
      const first = d.readString()
      const names = d.readVarUint()
      const rawBytes = d.readVarUint()
      if (names === 0 || names > 2 * SEAL_CHUNK_NAMES) throw new Error(`a chunk of ${names} names`)
      if (rawBytes < names * 2 || rawBytes > names * MAX_ENTRY_BYTES) throw new Error(`a chunk of ${names} names in ${rawBytes} bytes`)
      inflated += rawBytes
      if (inflated > MAX_SEAL_BYTES) throw new Error('the list inflates past 1 GiB')
      chunks.push({ first, count: names, rawBytes, packed: d.readBytes() })
    }
    d.end('seal file')
    return { agentId, generation, closedAt, chunks }
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `seal file: ${(error as Error).message}`, { cause: error })
  }
}

/** `u8 1 | varuint generation | u8 closed | u32 crc` */
export function encodeSealKey(key: SealKey): Uint8Array {
  return sealWithChecksum(
    new Encoder()
      .writeUint8(SEAL_VERSION)
      .writeVarUint(key.generation)
      .writeUint8(key.closed ? 1 : 0)
      .finish(),
  )
}

export function decodeSealKey(bytes: Uint8Array): SealKey {
  return decodeWith(bytes, 'seal key', (d) => ({ generation: d.readVarUint(), closed: d.readUint8() === 1 }))
}

/** `u8 1 | count, (string name, varuint fromSeq, varuint toSeq, varuint closedAt, varuint foundAt)* | u32 crc` */
export function encodeLosses(losses: readonly Loss[]): Uint8Array {
  const e = new Encoder().writeUint8(SEAL_VERSION).writeVarUint(losses.length)
  for (const l of losses) e.writeString(l.name).writeVarUint(l.fromSeq).writeVarUint(l.toSeq).writeVarUint(l.closedAt).writeVarUint(l.foundAt)
  return sealWithChecksum(e.finish())
}

export function decodeLosses(bytes: Uint8Array): Loss[] {
  return decodeWith(bytes, 'losses', (d) => {
    const count = d.readCount(5)
    const out: Loss[] = []
    for (let i = 0; i < count; i++) {
      out.push({ name: d.readString(), fromSeq: d.readVarUint(), toSeq: d.readVarUint(), closedAt: d.readVarUint(), foundAt: d.readVarUint() })
    }
    return out
  })
}
