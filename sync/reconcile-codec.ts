/**
 * The RANGES message of range-based reconciliation (sync/reconcile.ts,
 * sync/PROTOCOL.md "Reconciliation"): its layout and its codec. Pure.
 *
 * ```
 * RANGES  id:varUint role:u8 count:varUint(1..4096) range*
 * range = mode:u8 body upper:bound
 * bound = 0:u8                                  -- infinity (the last range)
 *       | 1:u8 shared:varUint suffix:varString  -- a name: `shared` code units of the previous name, then `suffix`
 * body  = (mode 0) skip
 *       | (mode 1) fingerprint:raw8
 *       | (mode 2 every item, 3 the items that differ) itemCount:varUint (name:key hash:raw8)*
 * ```
 *
 * Names (items and bounds alike, in the order written) are written against
 * the previous name of the message (`shared` leading UTF-16 code units
 * kept, the rest as UTF-8), starting from the empty name; they increase
 * (an item may equal the bound before it: ranges include their lower bound).
 */
import type { Decoder, Encoder } from '../crdt/codec.ts'
import { DecodeError } from '../crdt/errors.ts'
import { MAX_NAME_LENGTH, isValidName } from './names.ts'

/** Bytes of an item hash and of a range fingerprint. */
export const HASH_BYTES = 8
/** Ranges in one RANGES message at most. */
export const MAX_RANGES = 4096
/** Items in the lists of one RANGES message at most. */
export const MAX_LIST_ITEMS = 1 << 16

/** One item of a list: a name and its hash (the first {@link HASH_BYTES} of its state digest). */
export interface RangeItem {
  readonly name: string
  readonly hash: Uint8Array
}

/** What a range says: nothing more to do, its fingerprint, every item of the sender in it, or the sender's items that differ from the receiver's list. */
export type RangeBody =
  | { readonly mode: 'skip' }
  | { readonly mode: 'fingerprint'; readonly fingerprint: Uint8Array }
  | { readonly mode: 'all'; readonly items: readonly RangeItem[] }
  | { readonly mode: 'differ'; readonly items: readonly RangeItem[] }

/** A range `[previous upper, upper)`; `upper` null is infinity. */
export type Range = RangeBody & { readonly upper: string | null }

/** Who sent a RANGES: the side that started the reconciliation (and will send WANT), or the other. */
export type RangesRole = 'initiator' | 'responder'

/** One round of a reconciliation. */
export interface RangesMessage {
  readonly type: 'ranges'
  /** The reconciliation it belongs to (chosen by the initiator; a new one supersedes the old). */
  readonly id: number
  readonly role: RangesRole
  readonly ranges: readonly Range[]
}

const modes = { skip: 0, fingerprint: 1, all: 2, differ: 3 } as const

/** Leading UTF-16 code units `a` and `b` share, not splitting a surrogate pair. */
function sharedPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length)
  let n = 0
  while (n < max && a.charCodeAt(n) === b.charCodeAt(n)) n++
  if (n > 0 && n < b.length) {
    const last = b.charCodeAt(n - 1)
    if (last >= 0xd800 && last <= 0xdbff) n--
  }
  return n
}

/** Writes a RANGES payload (after its type byte). */
export function writeRanges(encoder: Encoder, message: RangesMessage): void {
  encoder
    .writeVarUint(message.id)
    .writeUint8(message.role === 'initiator' ? 0 : 1)
    .writeVarUint(message.ranges.length)
  let previous = ''
  const writeKey = (name: string): void => {
    const shared = sharedPrefix(previous, name)
    encoder.writeVarUint(shared).writeString(name.slice(shared))
    previous = name
  }
  for (const range of message.ranges) {
    encoder.writeUint8(modes[range.mode])
    if (range.mode === 'fingerprint') encoder.writeRaw(range.fingerprint)
    else if (range.mode === 'all' || range.mode === 'differ') {
      encoder.writeVarUint(range.items.length)
      for (const item of range.items) {
        writeKey(item.name)
        encoder.writeRaw(item.hash)
      }
    }
    if (range.upper === null) encoder.writeUint8(0)
    else {
      encoder.writeUint8(1)
      writeKey(range.upper)
    }
  }
}

/**
 * Reads a RANGES payload. Every count is checked against the bytes left and
 * the limits before anything is allocated for it; names must be valid and
 * strictly increasing (bounds and items alike), the last bound infinity.
 */
export function readRanges(decoder: Decoder): RangesMessage {
  const id = decoder.readVarUint()
  const roleByte = decoder.readUint8()
  if (roleByte > 1) throw new DecodeError(`ranges: unknown role ${roleByte}`)
  const count = decoder.readCount(2)
  if (count === 0 || count > MAX_RANGES) throw new DecodeError(`ranges: ${count} ranges (1 to ${MAX_RANGES})`)
  let previous = ''
  let afterBound = false
  let items = 0
  const readKey = (what: string): string => {
    const shared = decoder.readVarUint()
    if (shared > previous.length) throw new DecodeError(`ranges: ${what} shares ${shared} code units of a name of ${previous.length}`)
    const suffix = decoder.readString(3 * MAX_NAME_LENGTH)
    const name = previous.slice(0, shared) + suffix
    if (!isValidName(name)) throw new DecodeError(`ranges: invalid ${what}`)
    if (name < previous || (name === previous && !(afterBound && what === 'item'))) throw new DecodeError(`ranges: ${what} out of order`)
    previous = name
    afterBound = what === 'bound'
    return name
  }
  const ranges: Range[] = []
  for (let i = 0; i < count; i++) {
    const mode = decoder.readUint8()
    let body: RangeBody
    if (mode === modes.skip) body = { mode: 'skip' }
    else if (mode === modes.fingerprint) body = { mode: 'fingerprint', fingerprint: decoder.readRaw(HASH_BYTES).slice() }
    else if (mode === modes.all || mode === modes.differ) {
      const itemCount = decoder.readCount(2 + HASH_BYTES)
      items += itemCount
      if (items > MAX_LIST_ITEMS) throw new DecodeError(`ranges: more than ${MAX_LIST_ITEMS} items`)
      const list: RangeItem[] = []
      for (let k = 0; k < itemCount; k++) list.push({ name: readKey('item'), hash: decoder.readRaw(HASH_BYTES).slice() })
      body = { mode: mode === modes.all ? 'all' : 'differ', items: list }
    } else throw new DecodeError(`ranges: unknown mode ${mode}`)
    const boundKind = decoder.readUint8()
    if (boundKind > 1) throw new DecodeError(`ranges: unknown bound kind ${boundKind}`)
    const upper = boundKind === 0 ? null : readKey('bound')
    if (upper === null && i !== count - 1) throw new DecodeError('ranges: infinity before the last range')
    if (upper !== null && i === count - 1) throw new DecodeError('ranges: the last range does not reach infinity')
    if (upper !== null && 'items' in body && body.items.length > 0 && body.items[body.items.length - 1].name >= upper) {
      throw new DecodeError('ranges: an item beyond its range')
    }
    ranges.push({ ...body, upper })
  }
  return { type: 'ranges', id, role: roleByte === 0 ? 'initiator' : 'responder', ranges }
}
