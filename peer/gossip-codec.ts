/**
 * The gossipsub message of Concord's live fan-out: one committed unit (one
 * or more names' deltas that belong together), numbered by its publisher.
 *
 * ```
 * u8      format (1)
 * varuint run     publisher's run: a random number drawn when it starts publishing
 * varuint seq     1, 2, 3 ... within the run (a gap tells the receiver it missed one)
 * string  agent   the publisher's Concord peer id (checked against its sessions)
 * varuint count   >= 1 entries, each:
 *   string  name      a valid Concord name
 *   string  type      a known replica type
 *   bytes   delta
 * ```
 *
 * The delta bytes are the same as in a sync TRANSACTION; the receiver
 * validates them through the store, as for a session commit.
 */
import { Encoder, decodeGuarded } from '../crdt/codec.ts'
import { DecodeError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { KNOWN_TYPES, isValidName, type DeltaEntry } from '../sync/index.ts'

/** Format byte of {@link GossipUnit} messages. */
export const GOSSIP_FORMAT = 1

/** Largest number accepted for `run` and `seq` (2^53 - 1 would do; this keeps them plain integers). */
const MAX_COUNTER = Number.MAX_SAFE_INTEGER

/** One unit published on the live topic. */
export interface GossipUnit {
  readonly run: number
  readonly seq: number
  /** Concord peer id of the publisher. */
  readonly agent: string
  readonly entries: readonly DeltaEntry[]
}

/** Encodes a {@link GossipUnit}. */
export function encodeGossipUnit(unit: GossipUnit): Uint8Array {
  const encoder = new Encoder(64)
  encoder.writeUint8(GOSSIP_FORMAT).writeVarUint(unit.run).writeVarUint(unit.seq).writeString(unit.agent)
  encoder.writeVarUint(unit.entries.length)
  for (const entry of unit.entries) encoder.writeString(entry.name).writeString(entry.replicaType).writeBytes(entry.delta)
  return encoder.finish()
}

/**
 * Decodes a {@link GossipUnit}.
 * @throws DecodeError (`CONCORD_DECODE_ERROR`) for anything malformed: a
 * truncated or trailing byte, another format byte, an empty unit, an
 * invalid name or agent, an unknown type.
 */
export function decodeGossipUnit(bytes: Uint8Array): GossipUnit {
  return decodeGuarded('gossip unit', bytes, (decoder) => {
    decoder.readVersion(GOSSIP_FORMAT, 'gossip unit')
    const run = decoder.readVarUint()
    const seq = decoder.readVarUint()
    if (run > MAX_COUNTER || seq < 1 || seq > MAX_COUNTER) throw new DecodeError('gossip unit: bad run or seq')
    const agent = decoder.readString()
    if (agent.length === 0 || agent.length > 256) throw new DecodeError('gossip unit: invalid agent id')
    const count = decoder.readCount(3)
    if (count < 1) throw new DecodeError('gossip unit: no entries')
    const entries: DeltaEntry[] = []
    for (let i = 0; i < count; i++) {
      const name = decoder.readString()
      if (!isValidName(name)) throw new DecodeError('gossip unit: invalid name')
      const type = decoder.readString()
      if (!(KNOWN_TYPES as readonly string[]).includes(type)) throw new DecodeError(`gossip unit: unknown replica type "${type.slice(0, 40)}"`)
      entries.push({ name, replicaType: type as ReplicaType, delta: decoder.readBytes() })
    }
    return { run, seq, agent, entries }
  })
}
