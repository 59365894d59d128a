/**
 * Hybrid logical clock (Kulkarni et al., "Logical Physical Clocks", 2014).
 *
 * A timestamp is `(wall, logical)`: `wall` follows physical time in
 * milliseconds, `logical` orders events within one millisecond and across
 * clock skew. Ties between replicas are broken by agent id by the callers
 * that need a total order ({@link compareStamped}). Physical time is injected,
 * so tests are deterministic.
 */
import type { Decoder, Encoder } from './codec.ts'
import { DecodeError } from './errors.ts'

/** One HLC reading. */
export interface HlcTimestamp {
  /** Milliseconds, from the injected physical clock (never goes backwards). */
  readonly wall: number
  /** Counter within one `wall` value. */
  readonly logical: number
}

/** Source of physical time in milliseconds. */
export type PhysicalClock = () => number

/** The zero timestamp, before every other. */
export const HLC_ZERO: HlcTimestamp = Object.freeze({ wall: 0, logical: 0 })

/** Orders two timestamps: negative, zero or positive. */
export function compareHlc(a: HlcTimestamp, b: HlcTimestamp): number {
  return a.wall !== b.wall ? a.wall - b.wall : a.logical - b.logical
}

/** Orders `(timestamp, replica)` pairs: by time, then by agent id. */
export function compareStamped(a: HlcTimestamp, aReplica: string, b: HlcTimestamp, bReplica: string): number {
  const byTime = compareHlc(a, b)
  if (byTime !== 0) return byTime
  return aReplica < bReplica ? -1 : aReplica > bReplica ? 1 : 0
}

/** A hybrid logical clock for one replica. */
export class HybridClock {
  private last: HlcTimestamp = HLC_ZERO

  /** @param physical injected physical time in ms (defaults to `Date.now`). */
  constructor(private readonly physical: PhysicalClock = Date.now) {}

  /** The latest timestamp issued or observed. */
  get latest(): HlcTimestamp {
    return this.last
  }

  /** A new timestamp for a local event, greater than every earlier one. */
  now(): HlcTimestamp {
    const physical = Math.floor(this.physical())
    this.last = physical > this.last.wall ? { wall: physical, logical: 0 } : { wall: this.last.wall, logical: this.last.logical + 1 }
    return this.last
  }

  /** Advances past a timestamp seen from elsewhere (so later local events order after it). */
  observe(remote: HlcTimestamp): void {
    if (compareHlc(remote, this.last) > 0) this.last = { wall: remote.wall, logical: remote.logical }
  }
}

/** Writes a timestamp (two varuints). */
export function writeHlc(encoder: Encoder, stamp: HlcTimestamp): void {
  encoder.writeVarUint(stamp.wall).writeVarUint(stamp.logical)
}

/** Reads a timestamp written by {@link writeHlc}. */
export function readHlc(decoder: Decoder): HlcTimestamp {
  const wall = decoder.readVarUint()
  const logical = decoder.readVarUint()
  if (wall > 8.64e15) throw new DecodeError(`hlc wall time ${wall} out of range`)
  return { wall, logical }
}
