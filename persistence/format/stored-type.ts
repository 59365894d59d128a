/**
 * The replica type tag of a stored checkpoint, metadata or archive marker:
 * read with a length limit and checked against the registered types (a
 * record that passed its checksum may still come from a newer or foreign
 * writer), so no decoder hands on a type it cannot open.
 */
import type { Decoder } from '../../crdt/codec.ts'
import { DecodeError } from '../../crdt/errors.ts'
import { isRegisteredType } from '../../crdt/registry.ts'
import type { ReplicaType } from '../../crdt/replica.ts'

/** Reads a type tag; DecodeError (the caller's CORRUPT_RECORD) unless it is a registered type. */
export function readStoredType(decoder: Decoder, what: string): ReplicaType {
  const type = decoder.readString(32)
  if (!isRegisteredType(type)) throw new DecodeError(`${what}: unknown replica type "${type.slice(0, 40)}"`)
  return type
}
