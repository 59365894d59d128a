/**
 * PRESENCE, the message that carries presence entries, and its codec
 * (sync/PROTOCOL.md "Presence"; the entries' layout and bounds are
 * sync/presence.ts's).
 */
import type { Decoder, Encoder } from '../../crdt/codec.ts'
import { readPresenceEntries, writePresenceEntries, type PresenceEntry } from '../presence.ts'
import { MessageType } from './envelope.ts'

/**
 * Presence entries (sync/presence.ts), sent only to a remote whose HELLO
 * announced the `presence` extension; relayed by peers, never persisted.
 */
export interface PresenceMessage {
  readonly type: 'presence'
  readonly entries: readonly PresenceEntry[]
}

/** Writes a PRESENCE (type byte included). */
export function writePresence(encoder: Encoder, message: PresenceMessage): void {
  encoder.writeUint8(MessageType.presence)
  writePresenceEntries(encoder, message.entries)
}

/** Reads a PRESENCE's payload. */
export function readPresence(decoder: Decoder): PresenceMessage {
  return { type: 'presence', entries: readPresenceEntries(decoder) }
}
