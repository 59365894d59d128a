/**
 * The fields the message codecs share (sync/PROTOCOL.md "Encoding"): the
 * limits on decoded fields, and the readers and writers of names, type
 * tags, bounded strings, entry counts and positive numbers that check them.
 */
import type { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../../crdt/errors.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { isKnownType } from '../../crdt/catalog.ts'
import { MAX_NAME_LENGTH, isValidName } from '../names.ts'

/**
 * Limits on decoded fields. Every length and count read from the wire is
 * checked against these (and against the bytes that remain) before anything
 * is decoded or allocated for it.
 */
export const WIRE_LIMITS = {
  maxTokenBytes: 4096,
  maxFilterItems: 4096,
  maxExtensions: 64,
  maxExtensionKeyBytes: 256,
  maxExtensionValueBytes: 64 * 1024,
  maxMessageLength: 4096,
  /** An agent id is at most 256 UTF-16 code units: at most 3 UTF-8 bytes each. */
  maxAgentIdBytes: 3 * 256,
  /** A name is at most {@link MAX_NAME_LENGTH} UTF-16 code units: at most 3 UTF-8 bytes each. */
  maxNameBytes: 3 * MAX_NAME_LENGTH,
  /** The longest type tag (`lww-register`), with room. */
  maxTypeBytes: 32,
  /** Entries of one VERSIONS or TRANSACTION: the protocol's ceiling on the names one peer syncs (answers are split below it). */
  maxEntries: 1 << 20,
} as const

/**
 * The fewest bytes one VERSIONS or TRANSACTION entry takes: a name of one
 * byte (2), the shortest type tag `yjs` (4), an empty version or delta (1).
 */
const MIN_ENTRY_BYTES = 7

/** Writes a replica type tag. */
export function writeType(encoder: Encoder, type: ReplicaType): void {
  encoder.writeString(type)
}

/** Reads a replica type tag; one the catalog does not know is a {@link DecodeError}. */
export function readType(decoder: Decoder): ReplicaType {
  const type = decoder.readString(WIRE_LIMITS.maxTypeBytes)
  if (!isKnownType(type)) throw new DecodeError(`unknown replica type "${type.slice(0, 40)}"`)
  return type as ReplicaType
}

/** Reads a name; an empty or too long one is a {@link DecodeError}. */
export function readName(decoder: Decoder): string {
  const name = decoder.readString(WIRE_LIMITS.maxNameBytes)
  if (!isValidName(name)) throw new DecodeError(`invalid name (empty or longer than ${MAX_NAME_LENGTH})`)
  return name
}

/** Writes a name; one the decoder would refuse (empty, too long, a lone surrogate) is `CONCORD_INVALID_ARGUMENT`. */
export function writeName(encoder: Encoder, name: string): void {
  if (!isValidName(name))
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `cannot send the name ${JSON.stringify(String(name).slice(0, 40))}: not a non-empty, well-formed string of at most ${MAX_NAME_LENGTH} characters`,
    )
  encoder.writeString(name)
}

/** Reads a string of at most `maxBytes`; its error names `what`. */
export function readLimitedString(decoder: Decoder, maxBytes: number, what: string): string {
  try {
    return decoder.readString(maxBytes)
  } catch (error) {
    throw new DecodeError(`${what}: ${(error as Error).message}`, { cause: error })
  }
}

/** A count of VERSIONS or TRANSACTION entries: within the remaining bytes and {@link WIRE_LIMITS}.maxEntries. */
export function readEntryCount(decoder: Decoder, what: string): number {
  const count = decoder.readCount(MIN_ENTRY_BYTES)
  if (count > WIRE_LIMITS.maxEntries) throw new DecodeError(`${what}: ${count} entries, over the limit of ${WIRE_LIMITS.maxEntries}`)
  return count
}

/** Reads a number that must be at least 1 (a seq, a count, a size). */
export function readPositive(decoder: Decoder, what: string): number {
  const value = decoder.readVarUint()
  if (value < 1) throw new DecodeError(`${what} must be at least 1`)
  return value
}
