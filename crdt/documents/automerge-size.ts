/**
 * The decoded size of Automerge chunks, read from their column metadata and
 * run-length encodings without running Automerge: how many operations (op
 * rows, plus change rows in a document chunk) and how many bytes of values
 * and strings the library would build.
 *
 * Why: a chunk is tiny next to what it decodes to. One change of ~9.5 MiB
 * that inserts 10 million characters takes Automerge 3.5 about 3 GB and
 * 20 s, then traps (every document of the process is lost with it); a run
 * of 10 million `null` inserts is a few dozen bytes (every column is one
 * run); a document chunk's deflated columns inflate ~1000-fold. So the
 * replica checks these counts against its limits before Automerge sees a
 * byte. `A.decodeChange` would tell the op count too, but it builds every
 * op as a JS object (3.6 s for a 1 MB, 1M-op change): no cheaper than the
 * apply it would guard.
 *
 * Grammar (the Automerge binary format, as automerge-rs 0.6 writes it):
 * - change chunk payload: deps (uLEB count, 32-byte hashes), actor (uLEB
 *   length, bytes), seq (uLEB), start op (uLEB), time (sLEB), message
 *   (uLEB length, bytes), other actors (uLEB count, each uLEB length and
 *   bytes), op column metadata (uLEB count, then per column uLEB spec and
 *   uLEB byte length), the columns' data, extra bytes;
 * - document chunk payload: actors, heads (uLEB count, 32-byte hashes),
 *   change column metadata, op column metadata, the change columns' data,
 *   the op columns' data, head indexes;
 * - a column spec is `id << 4 | deflate << 3 | type`; types: 0 group, 1
 *   actor, 2 uLEB, 3 delta, 4 boolean, 5 string, 6 value metadata, 7 value.
 *   Integer and string columns are RLE (sLEB run length: > 0 a repeated
 *   value, < 0 that many literal values, 0 a uLEB count of nulls), boolean
 *   columns alternate uLEB run lengths (false first), value columns are raw.
 * A chunk's rows are bounded by the longest of its columns (every column
 * is counted, known or not), and its inserted bytes by the value columns'
 * lengths plus the decoded strings. Deflated columns (document chunks only:
 * Automerge refuses them in changes) are inflated with a cap, as the
 * library would inflate them. Anything that does not follow the grammar is
 * a {@link DecodeError}: Automerge's own parser would refuse it too.
 */
import { Inflate } from 'fflate'
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'
import type { AutomergeChunk } from './automerge-guard.ts'

/** What a delta decodes to. */
export interface DecodedSize {
  /** Operations (op rows; in a document chunk also its change rows). */
  operations: number
  /** Bytes of values and strings the operations carry, decoded. */
  insertedBytes: number
  /** Bytes of deflated columns after inflation. */
  inflatedBytes: number
}

/** The bounds a delta's decoded size is checked against. */
export interface DecodedSizeLimits {
  readonly maxOperations: number
  readonly maxInsertedBytes: number
  /** Largest total of inflated column bytes (document chunks). */
  readonly maxInflatedBytes: number
}

const COLUMN_DELTA = 3
const COLUMN_BOOLEAN = 4
const COLUMN_STRING = 5
const COLUMN_VALUE = 7
const HASH_BYTES = 32
/** Inflated in slices this large, so that one push cannot expand past the cap by much (DEFLATE expands at most ~1032x). */
const INFLATE_SLICE = 1024

/** A cursor over one byte range; every overrun is a DecodeError. */
class Cursor {
  constructor(
    readonly bytes: Uint8Array,
    public pos: number,
    readonly end: number,
    readonly what: string,
  ) {}

  fail(message: string): never {
    throw new DecodeError(`${this.what}: ${message} at offset ${this.pos}`)
  }

  get done(): boolean {
    return this.pos >= this.end
  }

  uleb(): number {
    let value = 0
    let mult = 1
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated LEB128')
      const byte = this.bytes[this.pos++]
      value += (byte & 0x7f) * mult
      if (byte < 0x80) return value
      mult *= 128
    }
    return this.fail('overlong LEB128')
  }

  /** A signed LEB128; returns its value (approximate beyond 2^53, enough to take a sign and a magnitude). */
  sleb(): number {
    let value = 0
    let mult = 1
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated LEB128')
      const byte = this.bytes[this.pos++]
      value += (byte & 0x7f) * mult
      mult *= 128
      if (byte < 0x80) return (byte & 0x40) !== 0 ? value - mult : value
    }
    return this.fail('overlong LEB128')
  }

  skip(n: number, what: string): void {
    if (n > this.end - this.pos) this.fail(`${what} of ${n} bytes exceeds the ${this.end - this.pos} remaining`)
    this.pos += n
  }

  /** A length-prefixed byte string; returns its length. */
  lengthPrefixed(what: string): number {
    const n = this.uleb()
    this.skip(n, what)
    return n
  }
}

/** Where one column's data lies, and how it is encoded. */
interface ColumnSpec {
  readonly type: number
  readonly deflated: boolean
  readonly length: number
}

function readColumnSpecs(cursor: Cursor): ColumnSpec[] {
  const count = cursor.uleb()
  // Each spec takes at least two bytes: the count is checked before anything is allocated.
  if (count * 2 > cursor.end - cursor.pos) cursor.fail(`column count ${count} cannot fit`)
  const specs: ColumnSpec[] = []
  for (let i = 0; i < count; i++) {
    const spec = cursor.uleb()
    const length = cursor.uleb()
    specs.push({ type: spec & 7, deflated: (spec & 8) !== 0, length })
  }
  return specs
}

/** Rows of a run-length encoded column; string values add their decoded bytes to `size`. */
function rleRows(cursor: Cursor, type: number, size: DecodedSize): number {
  let rows = 0
  while (!cursor.done) {
    const run = cursor.sleb()
    if (run > 0) {
      const bytes = readRleValue(cursor, type)
      rows += run
      size.insertedBytes += bytes * run
    } else if (run < 0) {
      for (let i = 0; i < -run; i++) size.insertedBytes += readRleValue(cursor, type)
      rows -= run
    } else {
      rows += cursor.uleb()
    }
  }
  return rows
}

/** Reads one value of an RLE column; returns the bytes it decodes to (strings only). */
function readRleValue(cursor: Cursor, type: number): number {
  if (type === COLUMN_STRING) return cursor.lengthPrefixed('string value')
  if (type === COLUMN_DELTA) cursor.sleb()
  else cursor.uleb()
  return 0
}

function booleanRows(cursor: Cursor): number {
  let rows = 0
  while (!cursor.done) rows += cursor.uleb()
  return rows
}

/** Rows of one column's data (`type` decides the encoding); value columns count their bytes instead. */
function columnRows(cursor: Cursor, type: number, size: DecodedSize): number {
  if (type === COLUMN_VALUE) {
    size.insertedBytes += cursor.end - cursor.pos
    return 0
  }
  if (type === COLUMN_BOOLEAN) return booleanRows(cursor)
  return rleRows(cursor, type, size)
}

/** Inflates a deflated column, stopping with CONCORD_LIMIT_EXCEEDED once the total passes the cap. */
function inflateColumn(data: Uint8Array, size: DecodedSize, limits: DecodedSizeLimits, what: string): Uint8Array {
  const parts: Uint8Array[] = []
  let total = 0
  const inflate = new Inflate((chunk) => {
    total += chunk.length
    size.inflatedBytes += chunk.length
    if (size.inflatedBytes > limits.maxInflatedBytes) {
      throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `${what}: deflated columns inflate past the limit of ${limits.maxInflatedBytes} bytes`)
    }
    parts.push(chunk)
  })
  try {
    for (let pos = 0; pos < data.length; pos += INFLATE_SLICE) {
      const end = Math.min(data.length, pos + INFLATE_SLICE)
      inflate.push(data.subarray(pos, end), end === data.length)
    }
    if (data.length === 0) inflate.push(data, true)
  } catch (error) {
    if (error instanceof ConcordError) throw error
    throw new DecodeError(`${what}: a deflated column does not inflate: ${(error as Error)?.message ?? error}`)
  }
  if (parts.length === 1) return parts[0]
  const out = new Uint8Array(total)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/** Walks the data of `specs` from the cursor's position; returns the largest row count of any column. */
function walkColumns(cursor: Cursor, specs: readonly ColumnSpec[], size: DecodedSize, limits: DecodedSizeLimits, allowDeflate: boolean): number {
  let rows = 0
  for (const spec of specs) {
    const start = cursor.pos
    cursor.skip(spec.length, 'column')
    let column: Cursor
    if (spec.deflated) {
      if (!allowDeflate) cursor.fail('a deflated column in a change chunk')
      const inflated = inflateColumn(cursor.bytes.subarray(start, cursor.pos), size, limits, cursor.what)
      column = new Cursor(inflated, 0, inflated.length, cursor.what)
    } else {
      column = new Cursor(cursor.bytes, start, cursor.pos, cursor.what)
    }
    rows = Math.max(rows, columnRows(column, spec.type, size))
  }
  return rows
}

function readActors(cursor: Cursor): void {
  const count = cursor.uleb()
  if (count > cursor.end - cursor.pos) cursor.fail(`actor count ${count} cannot fit`)
  for (let i = 0; i < count; i++) cursor.lengthPrefixed('actor id')
}

/** Adds the decoded size of one change chunk to `size`. */
function changeSize(chunk: AutomergeChunk, size: DecodedSize, limits: DecodedSizeLimits, what: string): void {
  const cursor = new Cursor(chunk.bytes, chunk.payloadOffset, chunk.bytes.length, what)
  const deps = cursor.uleb()
  cursor.skip(deps * HASH_BYTES, 'dependencies')
  cursor.lengthPrefixed('actor id')
  cursor.uleb() // seq
  cursor.uleb() // start op
  cursor.sleb() // time
  size.insertedBytes += cursor.lengthPrefixed('message')
  readActors(cursor)
  const specs = readColumnSpecs(cursor)
  size.operations += walkColumns(cursor, specs, size, limits, false)
  // The rest are the change's extra bytes (kept as they are).
}

/** Adds the decoded size of one document chunk to `size`. */
function documentSize(chunk: AutomergeChunk, size: DecodedSize, limits: DecodedSizeLimits, what: string): void {
  const cursor = new Cursor(chunk.bytes, chunk.payloadOffset, chunk.bytes.length, what)
  readActors(cursor)
  const heads = cursor.uleb()
  cursor.skip(heads * HASH_BYTES, 'heads')
  const changeSpecs = readColumnSpecs(cursor)
  const opSpecs = readColumnSpecs(cursor)
  size.operations += walkColumns(cursor, changeSpecs, size, limits, true)
  size.operations += walkColumns(cursor, opSpecs, size, limits, true)
  // Head indexes follow (one uLEB per head).
}

/**
 * The decoded size of `chunks` (as {@link splitAutomergeChunks} gives
 * them), checked against `limits` as it is read: CONCORD_LIMIT_EXCEEDED as
 * soon as a count passes its limit, DecodeError for a chunk that breaks the
 * format's grammar.
 */
export function checkAutomergeSize(chunks: readonly AutomergeChunk[], limits: DecodedSizeLimits, what: string): DecodedSize {
  const size: DecodedSize = { operations: 0, insertedBytes: 0, inflatedBytes: 0 }
  for (const chunk of chunks) {
    if (chunk.type === 1) changeSize(chunk, size, limits, what)
    else documentSize(chunk, size, limits, what)
    if (size.operations > limits.maxOperations) {
      throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `${what}: ${size.operations} operations exceed the limit of ${limits.maxOperations}`)
    }
    if (size.insertedBytes > limits.maxInsertedBytes) {
      throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `${what}: ${size.insertedBytes} bytes of values exceed the limit of ${limits.maxInsertedBytes}`)
    }
  }
  return size
}
