/**
 * Presence over sync sessions: who is working on what, relayed between
 * peers and never persisted (sync/PROTOCOL.md, "Presence").
 *
 * A peer that takes presence says so with the HELLO extension `presence`
 * (value: varUint format, 1); a session sends PRESENCE messages only to a
 * remote that announced it, so older peers never see one. Each entry is
 * one agent's latest state: newer `clock` wins, `ttlMs` says how long it
 * holds from when it is received (0: the agent left). The state bytes are
 * opaque here (the peer layer carries JSON).
 *
 * Pure: the codec, the limits and the extension; sessions route the
 * messages, the peer keeps the table (peer/presence.ts).
 */
import { Decoder, Encoder } from '../crdt/codec.ts'
import { DecodeError } from '../crdt/errors.ts'
import { MAX_NAME_LENGTH, isValidName } from './names.ts'
import { TokenBucket } from './token-bucket.ts'

/** HELLO extension key of presence. */
export const PRESENCE_EXTENSION = 'presence'
/** The presence format this code speaks (the extension's value). */
export const PRESENCE_FORMAT = 1

/** Bounds of presence on the wire. */
export const PRESENCE_LIMITS = {
  /** Entries in one PRESENCE message. */
  maxEntriesPerMessage: 64,
  /** Characters of an agent id (an entry's agent or its peer). */
  maxIdLength: 256,
  /** Bytes of one entry's state. */
  maxStateBytes: 4096,
  /** Longest time to live of an entry (10 minutes); longer is refused. */
  maxTtlMs: 600_000,
  /** PRESENCE messages taken from one session per second, and in a burst; more are dropped (counted). */
  messagesPerSecond: 20,
  messageBurst: 40,
} as const

/** One agent's presence. */
export interface PresenceEntry {
  /** Who: the agent (an MCP client, a peer). */
  readonly agent: string
  /** The peer that reported the agent (where it is served). */
  readonly peer: string
  /** The agent's presence clock: a newer entry has a larger one. */
  readonly clock: number
  /** How long the entry holds once received, ms; 0 when the agent left. */
  readonly ttlMs: number
  /** The name the agent works on ('' for none): the entry is sent only to peers that may read it. */
  readonly name: string
  /** What the agent says it does (opaque bytes; JSON at the peer layer). */
  readonly state: Uint8Array
}

/** The HELLO extension that announces presence. */
export function presenceExtension(): { readonly key: string; readonly value: Uint8Array } {
  return { key: PRESENCE_EXTENSION, value: new Encoder(2).writeVarUint(PRESENCE_FORMAT).finish() }
}

/** Whether a HELLO's extensions announce a presence format this code speaks. */
export function takesPresence(extensions: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }>): boolean {
  const extension = extensions.find((candidate) => candidate.key === PRESENCE_EXTENSION)
  if (!extension) return false
  try {
    const decoder = new Decoder(extension.value)
    return decoder.readVarUint() === PRESENCE_FORMAT
  } catch {
    return false
  }
}

function readId(decoder: Decoder, what: string): string {
  const id = decoder.readString()
  if (id.length === 0 || id.length > PRESENCE_LIMITS.maxIdLength) throw new DecodeError(`presence: invalid ${what} id`)
  return id
}

/** Writes the entries of a PRESENCE message (after its type byte). */
export function writePresenceEntries(encoder: Encoder, entries: readonly PresenceEntry[]): void {
  encoder.writeVarUint(entries.length)
  for (const entry of entries) {
    encoder.writeString(entry.agent).writeString(entry.peer).writeVarUint(entry.clock).writeVarUint(entry.ttlMs)
    encoder.writeString(entry.name).writeBytes(entry.state)
  }
}

/** Reads the entries of a PRESENCE message, checking every bound; DecodeError otherwise. */
export function readPresenceEntries(decoder: Decoder): PresenceEntry[] {
  // agent, peer, clock, ttl, name, state: at least 6 bytes each.
  const count = decoder.readCount(6)
  if (count === 0 || count > PRESENCE_LIMITS.maxEntriesPerMessage) {
    throw new DecodeError(`presence: ${count} entries (1..${PRESENCE_LIMITS.maxEntriesPerMessage})`)
  }
  const entries: PresenceEntry[] = []
  for (let i = 0; i < count; i++) {
    const agent = readId(decoder, 'agent')
    const peer = readId(decoder, 'peer')
    const clock = decoder.readVarUint()
    const ttlMs = decoder.readVarUint()
    if (ttlMs > PRESENCE_LIMITS.maxTtlMs) throw new DecodeError(`presence: a ttl of ${ttlMs} ms is over ${PRESENCE_LIMITS.maxTtlMs}`)
    const name = decoder.readString()
    if (name.length > 0 && !isValidName(name)) throw new DecodeError(`presence: invalid name (longer than ${MAX_NAME_LENGTH})`)
    const state = decoder.readBytes()
    if (state.length > PRESENCE_LIMITS.maxStateBytes)
      throw new DecodeError(`presence: a state of ${state.length} bytes is over ${PRESENCE_LIMITS.maxStateBytes}`)
    entries.push({ agent, peer, clock, ttlMs, name, state })
  }
  return entries
}

/** Splits entries into PRESENCE messages' worth, keeping those `mayRead` allows (no name, or a readable name). */
export function presenceBatches(entries: readonly PresenceEntry[], mayRead: (name: string) => boolean): PresenceEntry[][] {
  const visible = entries.filter((entry) => entry.name === '' || mayRead(entry.name))
  const batches: PresenceEntry[][] = []
  for (let i = 0; i < visible.length; i += PRESENCE_LIMITS.maxEntriesPerMessage) batches.push(visible.slice(i, i + PRESENCE_LIMITS.maxEntriesPerMessage))
  return batches
}

/** Rate limit of the PRESENCE messages one session takes (pure: time is passed in). */
export class PresenceGate {
  private bucket: TokenBucket | undefined

  /** Whether to take a PRESENCE message received at `now` (false: over the rate, dropped). */
  take(now: number): boolean {
    this.bucket ??= new TokenBucket(PRESENCE_LIMITS.messagesPerSecond, PRESENCE_LIMITS.messageBurst, now)
    return this.bucket.tryTake(1, now)
  }
}
