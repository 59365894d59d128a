/**
 * Structural validator for Yjs (13.6) v1 updates and state vectors, run
 * BEFORE Yjs sees untrusted bytes.
 *
 * Why: Yjs decodes an update while it applies it, so a malformed update can
 * throw half way (after `doc.get(name)` created types, or after the structs
 * were integrated and only the delete set is bad: the document is then
 * partially changed), claim huge counts or lengths in a few bytes, nest
 * `ContentAny` values deep enough to overflow the stack, or reference
 * structs that do not exist yet (Yjs then throws inside integration). See
 * Yjs issues 479, 498 and 687.
 *
 * What {@link validateYjsUpdate} guarantees for an update it accepts:
 * - every byte is read exactly once by the same grammar Yjs uses
 *   (`readClientsStructRefs`, `readItemContent`, `readDeleteSet`, lib0
 *   `readAny`), and nothing trails; the walk is one linear pass, so it ends
 *   in time proportional to the input and allocates nothing proportional to
 *   any claimed count;
 * - every count is bounded by the bytes that remain (a count of N items
 *   needs at least N bytes), every length prefix by the bytes that remain,
 *   every clock and length is a safe integer and clocks stay below 2^53;
 * - struct kinds, content kinds and type refs are ones Yjs knows; parent info
 *   is 0 or 1; strings are valid UTF-8; JSON contents parse; `ContentAny`
 *   nesting stays within `limits.maxNesting`; no struct and no delete range
 *   has length 0 (found by fuzzing: Yjs throws on a pending empty range);
 * - references inside one client go backwards only (an origin, right origin
 *   or parent of client C at clock k names a clock < k): a newer reference
 *   to the same client is what makes Yjs throw inside integration;
 * - an item's origin and right origin are not the same character (found by
 *   the law suite with a flipped clock bit: Yjs then places the item by how
 *   the receiver's store happens to be split, so a replica and its own
 *   reloaded snapshot disagree);
 * - no client appears twice in the struct section;
 * - subdocuments (`ContentDoc`) are rejected: the replica does not persist
 *   or sync their content.
 * So Yjs's decoder cannot throw on it, and its integration only follows
 * references that exist (or parks the struct as pending until they do).
 *
 * What it does not judge: the meaning of a well-formed update (an origin in
 * another type than its right origin, a peer that deletes everything);
 * access control is the sync layer's job. In particular an item whose right
 * origin lies LEFT of its origin (a flipped clock can make one) is not
 * rejected, although Yjs places it by the receiver's store layout (replicas
 * and reloads may disagree on where it goes). Whether it is left is a fact
 * of the receiver's document order: Yjs keeps that order as a linked list
 * only (deciding it costs a walk of the list), and it depends on what the
 * receiver holds when the item integrates. The cheap partial proofs (both
 * ends inside one item of the update, or of the receiver's store) depend on
 * how structs happen to be split, so once such an item got in anywhere, a
 * replica's own later deltas and snapshots (which re-encode it next to a
 * merged run) could be refused by the same check: sync between honest peers
 * would stall and a snapshot would not load. Only the same-character case
 * is both cheap and never present in honest output.
 */
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'
import type { DocumentLimits } from './options.ts'

/** What the validator learned about an accepted update. */
export interface YjsUpdateSummary {
  /** Number of structs (items, GC and skip ranges) in the update. */
  readonly structs: number
  /** Number of delete ranges in the update's delete set. */
  readonly deleteRanges: number
  /** Bytes of item content (strings, JSON, binaries, embeds, formats, any values). */
  readonly insertedBytes: number
}

/**
 * Told, while an update is validated, what it needs to exist before Yjs
 * can integrate it (see yjs-waiting.ts): every struct it references and
 * every clock it deletes, and where each client's structs start and end.
 */
export interface YjsDependencyCollector {
  /**
   * The update references (or deletes) `client`'s clocks below `clock`: they
   * must exist. (A struct's references to its own client precede it, and
   * exist once its run attaches: they are not reported.)
   */
  need(client: number, clock: number): void
  /**
   * The update holds structs of `client` over `[start, end)`; those after
   * its last skip range attach only once the document holds `attach`.
   */
  run(client: number, start: number, attach: number, end: number): void
}

const MAX_CLOCK = Number.MAX_SAFE_INTEGER

/** A cursor over the bytes with bounds-checked lib0-style reads; every failure is a {@link DecodeError}. */
export class YjsUpdateReader {
  pos = 0
  constructor(readonly bytes: Uint8Array) {}

  get remaining(): number {
    return this.bytes.length - this.pos
  }

  fail(message: string): never {
    throw new DecodeError(`yjs update: ${message} at offset ${this.pos}`)
  }

  uint8(): number {
    if (this.pos >= this.bytes.length) this.fail('unexpected end of input')
    return this.bytes[this.pos++]
  }

  /** lib0 `readVarUint`: 7 bits per byte, little-endian, safe integers only. */
  varUint(): number {
    const bytes = this.bytes
    let num = 0
    let mult = 1
    while (this.pos < bytes.length) {
      const r = bytes[this.pos++]
      num += (r & 0x7f) * mult
      if (r < 0x80) {
        if (num > MAX_CLOCK) this.fail('integer out of range')
        return num
      }
      mult *= 128
      if (num > MAX_CLOCK || mult > 2 ** 63) this.fail('integer out of range')
    }
    return this.fail('unexpected end of input in varuint')
  }

  /** lib0 `readVarInt`: sign and 6 bits in the first byte, then 7 bits per byte. */
  varInt(): void {
    let r = this.uint8()
    let num = r & 0x3f
    let mult = 64
    if ((r & 0x80) === 0) return
    for (;;) {
      r = this.uint8()
      num += (r & 0x7f) * mult
      mult *= 128
      if (r < 0x80) break
      if (num > MAX_CLOCK || mult > 2 ** 63) this.fail('integer out of range')
    }
    if (num > MAX_CLOCK) this.fail('integer out of range')
  }

  /** A count of items of at least `minItemBytes` bytes each, checked against what remains. */
  count(minItemBytes: number, what: string): number {
    const n = this.varUint()
    if (n * minItemBytes > this.remaining) this.fail(`${what} count ${n} cannot fit in ${this.remaining} remaining bytes`)
    return n
  }

  skip(n: number, what: string): void {
    if (n > this.remaining) this.fail(`${what} of ${n} bytes exceeds the ${this.remaining} remaining`)
    this.pos += n
  }

  /** A length-prefixed UTF-8 string; returns its length in UTF-16 code units. */
  string(what: string): number {
    const length = this.varUint()
    if (length > this.remaining) this.fail(`${what} of ${length} bytes exceeds the ${this.remaining} remaining`)
    const units = utf16Length(this.bytes, this.pos, this.pos + length)
    if (units < 0) this.fail(`invalid UTF-8 in ${what}`)
    this.pos += length
    return units
  }

  /** A length-prefixed string that must parse as JSON (Yjs calls JSON.parse on it). */
  json(what: string, allowUndefined: boolean): void {
    const length = this.varUint()
    if (length > this.remaining) this.fail(`${what} of ${length} bytes exceeds the ${this.remaining} remaining`)
    let text: string
    try {
      text = textDecoder.decode(this.bytes.subarray(this.pos, this.pos + length))
    } catch {
      return this.fail(`invalid UTF-8 in ${what}`)
    }
    this.pos += length
    if (allowUndefined && text === 'undefined') return
    try {
      JSON.parse(text)
    } catch {
      this.fail(`${what} is not valid JSON`)
    }
  }
}

const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Validates UTF-8 (as a fatal TextDecoder would) in `bytes[start, end)` and
 * returns the length of the decoded string in UTF-16 code units, or -1 if
 * the bytes are not valid UTF-8.
 */
export function utf16Length(bytes: Uint8Array, start: number, end: number): number {
  let units = 0
  let i = start
  while (i < end) {
    const b = bytes[i]
    if (b < 0x80) {
      i++
      units++
    } else if (b >= 0xc2 && b <= 0xdf) {
      if (i + 1 >= end || (bytes[i + 1] & 0xc0) !== 0x80) return -1
      i += 2
      units++
    } else if (b >= 0xe0 && b <= 0xef) {
      if (i + 2 >= end) return -1
      const b1 = bytes[i + 1]
      if ((b1 & 0xc0) !== 0x80 || (bytes[i + 2] & 0xc0) !== 0x80) return -1
      if (b === 0xe0 && b1 < 0xa0) return -1 // overlong
      if (b === 0xed && b1 >= 0xa0) return -1 // UTF-16 surrogate
      i += 3
      units++
    } else if (b >= 0xf0 && b <= 0xf4) {
      if (i + 3 >= end) return -1
      const b1 = bytes[i + 1]
      if ((b1 & 0xc0) !== 0x80 || (bytes[i + 2] & 0xc0) !== 0x80 || (bytes[i + 3] & 0xc0) !== 0x80) return -1
      if (b === 0xf0 && b1 < 0x90) return -1 // overlong
      if (b === 0xf4 && b1 >= 0x90) return -1 // above U+10FFFF
      i += 4
      units += 2
    } else {
      return -1
    }
  }
  return units
}

/** lib0 `readAny`, checked; `depth` counts enclosing arrays/objects. */
function readAny(reader: YjsUpdateReader, depth: number, maxNesting: number): { isObject: boolean } {
  const tag = reader.uint8()
  switch (tag) {
    case 127: // undefined
    case 126: // null
    case 121: // false
    case 120: // true
      return { isObject: false }
    case 125: // integer
      reader.varInt()
      return { isObject: false }
    case 124: // float32
      reader.skip(4, 'float32')
      return { isObject: false }
    case 123: // float64
    case 122: // bigint64
      reader.skip(8, 'float64')
      return { isObject: false }
    case 119: // string
      reader.string('string value')
      return { isObject: false }
    case 118: {
      // object
      if (depth >= maxNesting) reader.fail(`value nested deeper than ${maxNesting}`)
      const n = reader.count(2, 'object entry')
      for (let i = 0; i < n; i++) {
        reader.string('object key')
        readAny(reader, depth + 1, maxNesting)
      }
      return { isObject: true }
    }
    case 117: {
      // array
      if (depth >= maxNesting) reader.fail(`value nested deeper than ${maxNesting}`)
      const n = reader.count(1, 'array element')
      for (let i = 0; i < n; i++) readAny(reader, depth + 1, maxNesting)
      return { isObject: false }
    }
    case 116: {
      // Uint8Array
      reader.skip(reader.varUint(), 'binary value')
      return { isObject: false }
    }
    default:
      return reader.fail(`unknown value tag ${tag}`)
  }
}

/** Reads an ID that, when it names `client`, must name a clock before `clock`. */
function readReference(reader: YjsUpdateReader, client: number, clock: number, what: string, deps: YjsDependencyCollector | undefined): void {
  const refClient = reader.varUint()
  const refClock = reader.varUint()
  if (refClient === client && refClock >= clock) reader.fail(`${what} ${refClient}:${refClock} does not precede the struct ${client}:${clock}`)
  // A reference to the struct's own client precedes it: met once its run attaches.
  if (refClient !== client) deps?.need(refClient, refClock + 1)
}

/** Reads one item's content; returns the item's length (clock units). */
function readContent(reader: YjsUpdateReader, ref: number, limits: DocumentLimits): number {
  switch (ref) {
    case 1: {
      // ContentDeleted
      const len = reader.varUint()
      if (len === 0) reader.fail('deleted content of length 0')
      return len
    }
    case 2: {
      // ContentJSON
      const n = reader.count(1, 'JSON content')
      if (n === 0) reader.fail('JSON content of length 0')
      for (let i = 0; i < n; i++) reader.json('JSON content', true)
      return n
    }
    case 3: // ContentBinary
      reader.skip(reader.varUint(), 'binary content')
      return 1
    case 4: {
      // ContentString
      const units = reader.string('string content')
      if (units === 0) reader.fail('string content of length 0')
      return units
    }
    case 5: // ContentEmbed
      reader.json('embed', false)
      return 1
    case 6: // ContentFormat
      reader.string('format key')
      reader.json('format value', false)
      return 1
    case 7: {
      // ContentType
      const typeRef = reader.varUint()
      if (typeRef > 6) reader.fail(`unknown type ref ${typeRef}`)
      if (typeRef === 3 || typeRef === 5) reader.string('xml node name') // YXmlElement, YXmlHook
      return 1
    }
    case 8: {
      // ContentAny
      const n = reader.count(1, 'any content')
      if (n === 0) reader.fail('any content of length 0')
      for (let i = 0; i < n; i++) readAny(reader, 0, limits.maxNesting)
      return n
    }
    case 9: // ContentDoc
      return reader.fail('subdocuments (ContentDoc) are not supported')
    default:
      return reader.fail(`unknown content ref ${ref}`)
  }
}

/**
 * Reads one struct of `client` at `clock` (an item with its origins, parent
 * and content, or a GC or skip range), checked; returns its length in clock
 * units.
 */
export function readStruct(reader: YjsUpdateReader, client: number, clock: number, limits: DocumentLimits, deps?: YjsDependencyCollector): number {
  const info = reader.uint8()
  const ref = info & 0x1f
  if (ref === 0 || ref === 10) {
    // GC or Skip
    if (info !== ref) reader.fail(`flags ${info >> 5} on a ${ref === 0 ? 'GC' : 'skip'} struct`)
    const length = reader.varUint()
    if (length === 0) reader.fail('struct of length 0')
    return length
  }
  let originClient = -1
  let originClock = -1
  if ((info & 0x80) !== 0) {
    originClient = reader.varUint()
    originClock = reader.varUint()
    if (originClient === client && originClock >= clock) reader.fail(`origin ${originClient}:${originClock} does not precede the struct ${client}:${clock}`)
    if (originClient !== client) deps?.need(originClient, originClock + 1)
  }
  if ((info & 0x40) !== 0) {
    const rightClient = reader.varUint()
    const rightClock = reader.varUint()
    if (rightClient === client && rightClock >= clock) reader.fail(`right origin ${rightClient}:${rightClock} does not precede the struct ${client}:${clock}`)
    // The left and right neighbours of an insertion are two characters.
    if (rightClient === originClient && rightClock === originClock) reader.fail(`origin and right origin are both ${rightClient}:${rightClock}`)
    if (rightClient !== client) deps?.need(rightClient, rightClock + 1)
  }
  if ((info & 0xc0) === 0) {
    const parentInfo = reader.varUint()
    if (parentInfo === 1) reader.string('parent key')
    else if (parentInfo === 0) readReference(reader, client, clock, 'parent', deps)
    else reader.fail(`parent info ${parentInfo}`)
    if ((info & 0x20) !== 0) reader.string('parent sub')
  }
  const contentStart = reader.pos
  const length = readContent(reader, ref, limits)
  if (ref !== 1 && ref !== 7) contentBytes += reader.pos - contentStart
  return length
}

/** Content bytes read by {@link readStruct} since the last reset (one counter: the walk is synchronous). */
let contentBytes = 0

/**
 * Validates a Yjs v1 update (see the module comment for the guarantees).
 * Throws {@link DecodeError} on anything Yjs could choke on.
 */
export function validateYjsUpdate(bytes: Uint8Array, limits: DocumentLimits, deps?: YjsDependencyCollector): YjsUpdateSummary {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('yjs update: expected a Uint8Array')
  if (bytes.length < 2) throw new DecodeError(`yjs update: ${bytes.length} bytes is too short (an empty update has 2)`)
  if (bytes.length > limits.maxBytes) throw new DecodeError(`yjs update: ${bytes.length} bytes exceeds the limit of ${limits.maxBytes}`)
  const reader = new YjsUpdateReader(bytes)
  contentBytes = 0
  let structs = 0
  // Struct section: per client, its structs from a start clock.
  const numClients = reader.count(3, 'client')
  const seen = numClients > 1 ? new Set<number>() : undefined
  for (let c = 0; c < numClients; c++) {
    const numStructs = reader.count(2, 'struct')
    const client = reader.varUint()
    if (seen) {
      if (seen.has(client)) reader.fail(`client ${client} appears twice`)
      seen.add(client)
    }
    const start = reader.varUint()
    let clock = start
    let attach = start
    for (let s = 0; s < numStructs; s++) {
      const skip = deps !== undefined && reader.bytes[reader.pos] === 10
      const length = readStruct(reader, client, clock, limits, deps)
      clock += length
      if (skip) attach = clock
      if (clock > MAX_CLOCK) reader.fail(`clock of client ${client} exceeds 2^53`)
      structs++
    }
    if (numStructs > 0) deps?.run(client, start, attach, clock)
  }
  // Delete set: per client, ranges [clock, clock + len).
  let deleteRanges = 0
  const dsClients = reader.count(2, 'delete set client')
  for (let c = 0; c < dsClients; c++) {
    const client = reader.varUint()
    const numDeletes = reader.count(2, 'delete range')
    for (let d = 0; d < numDeletes; d++) {
      const clock = reader.varUint()
      const len = reader.varUint()
      // Yjs throws re-encoding a pending delete range of length 0 (v2 writes len - 1).
      if (len === 0) reader.fail('delete range of length 0')
      if (clock + len > MAX_CLOCK) reader.fail('delete range exceeds 2^53')
      deps?.need(client, clock + len)
      deleteRanges++
    }
  }
  if (reader.remaining !== 0) reader.fail(`${reader.remaining} trailing bytes`)
  return { structs, deleteRanges, insertedBytes: contentBytes }
}

/**
 * Checks the decoded size of an accepted update against the delta limits
 * (`maxOperations`: structs plus delete ranges; `maxInsertedBytes`).
 * Throws `CONCORD_LIMIT_EXCEEDED`.
 */
export function checkYjsDeltaSize(summary: YjsUpdateSummary, limits: DocumentLimits): void {
  const operations = summary.structs + summary.deleteRanges
  if (operations > limits.maxOperations) {
    throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `yjs update: ${operations} structs and delete ranges exceed the limit of ${limits.maxOperations}`)
  }
  if (summary.insertedBytes > limits.maxInsertedBytes) {
    throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `yjs update: ${summary.insertedBytes} bytes of content exceed the limit of ${limits.maxInsertedBytes}`)
  }
}

/** Validates an encoded Yjs state vector (`Y.encodeStateVector`). Throws {@link DecodeError}. */
export function validateYjsStateVector(bytes: Uint8Array, limits: DocumentLimits): void {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('yjs state vector: expected a Uint8Array')
  if (bytes.length === 0) throw new DecodeError('yjs state vector: empty input')
  if (bytes.length > limits.maxBytes) throw new DecodeError(`yjs state vector: ${bytes.length} bytes exceeds the limit of ${limits.maxBytes}`)
  const reader = new YjsUpdateReader(bytes)
  const n = reader.count(2, 'state vector entry')
  for (let i = 0; i < n; i++) {
    reader.varUint()
    reader.varUint()
  }
  if (reader.remaining !== 0) throw new DecodeError(`yjs state vector: ${reader.remaining} trailing bytes`)
}
