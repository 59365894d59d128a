/**
 * The gossipsub message of Concord's live fan-out: one or more committed
 * units (each: one or more names' deltas that belong together, applied all
 * or none), numbered by their publisher. Units committed close together are
 * sent in one message, so the per-message cost of gossipsub (signature,
 * message id, IHAVE gossip) is paid once for them.
 *
 * ```
 * u8      format (1)
 * varuint run     publisher's run: a random number drawn when it starts publishing
 * varuint seq     1, 2, 3 ... per message within the run (a gap tells the receiver it missed one)
 * string  agent   the publisher's agent id (checked against its sessions)
 * varuint units   >= 1, each:
 *   varuint count   >= 1 entries, each:
 *     string  name      a valid Concord name
 *     string  type      a known replica type
 *     bytes   delta
 * ```
 *
 * The delta bytes are the same as in a sync TRANSACTION; the receiver
 * validates them through the store, as for a session commit.
 */
import { Encoder, decodeGuarded, type Decoder } from '../crdt/codec.ts'
import { DecodeError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { isKnownType } from '../crdt/catalog.ts'
import { WIRE_LIMITS, isValidName, type DeltaEntry } from '../sync/index.ts'

/** Format byte of {@link GossipMessage}s. */
export const GOSSIP_FORMAT = 1

/** One message published on the live topic. */
export interface GossipMessage {
  readonly run: number
  readonly seq: number
  /** Agent id of the publisher. */
  readonly agent: string
  /** Committed units, in commit order; each is applied all or none. */
  readonly units: ReadonlyArray<readonly DeltaEntry[]>
}

/** Bytes {@link encodeGossipMessage} adds for `agent` and the counters, at most. */
export function gossipHeaderBytes(agent: string): number {
  return 1 + 10 + 10 + 5 + new TextEncoder().encode(agent).length + 5
}

/** Encoded size of one unit inside a message (for batching under a size limit). */
export function gossipUnitBytes(entries: readonly DeltaEntry[]): number {
  const encoder = new Encoder(64)
  writeUnit(encoder, entries)
  return encoder.byteLength
}

/** Encodes a {@link GossipMessage}. */
export function encodeGossipMessage(message: GossipMessage): Uint8Array {
  const encoder = new Encoder(64)
  encoder.writeUint8(GOSSIP_FORMAT).writeVarUint(message.run).writeVarUint(message.seq).writeString(message.agent)
  encoder.writeVarUint(message.units.length)
  for (const unit of message.units) writeUnit(encoder, unit)
  return encoder.finish()
}

function writeUnit(encoder: Encoder, entries: readonly DeltaEntry[]): void {
  encoder.writeVarUint(entries.length)
  for (const entry of entries) encoder.writeString(entry.name).writeString(entry.replicaType).writeBytes(entry.delta)
}

/**
 * Decodes a {@link GossipMessage}.
 * @throws DecodeError (`CONCORD_DECODE_ERROR`) for anything malformed: a
 * truncated or trailing byte, another format byte, seq 0, an empty message
 * or unit, an invalid name or agent, an unknown type.
 */
export function decodeGossipMessage(bytes: Uint8Array): GossipMessage {
  return decodeGuarded('gossip message', bytes, (decoder) => {
    decoder.readVersion(GOSSIP_FORMAT, 'gossip message')
    const run = decoder.readVarUint()
    const seq = decoder.readVarUint()
    if (seq < 1) throw new DecodeError('gossip message: seq must be at least 1')
    const agent = decoder.readString(WIRE_LIMITS.maxAgentIdBytes)
    if (agent.length === 0 || agent.length > 256) throw new DecodeError('gossip message: invalid agent id')
    // A unit takes at least 8 bytes (its count and one entry), an entry at least 7 (see sync/messages/fields.ts).
    const count = decoder.readCount(8)
    if (count < 1) throw new DecodeError('gossip message: no units')
    const units: DeltaEntry[][] = []
    for (let i = 0; i < count; i++) units.push(readUnit(decoder))
    return { run, seq, agent, units }
  })
}

function readUnit(decoder: Decoder): DeltaEntry[] {
  const count = decoder.readCount(7)
  if (count < 1) throw new DecodeError('gossip message: an empty unit')
  if (count > WIRE_LIMITS.maxEntries) throw new DecodeError(`gossip message: a unit of ${count} entries`)
  const entries: DeltaEntry[] = []
  for (let i = 0; i < count; i++) {
    const name = decoder.readString(WIRE_LIMITS.maxNameBytes)
    if (!isValidName(name)) throw new DecodeError('gossip message: invalid name')
    const type = decoder.readString(WIRE_LIMITS.maxTypeBytes)
    if (!isKnownType(type)) throw new DecodeError(`gossip message: unknown replica type "${type.slice(0, 40)}"`)
    entries.push({ name, replicaType: type as ReplicaType, delta: decoder.readBytes() })
  }
  return entries
}
