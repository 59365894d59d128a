/**
 * Mutations of the fuzzer: random bytes, a valid encoding as is, truncated,
 * with bits flipped, with a huge count or length written into it, with a
 * part repeated until the input is large, spliced with another, or with a
 * run of 0x00 / 0xff bytes. Each is a function of a seeded PRNG, so a case
 * replays from its seed and index alone.
 */
import type { Prng } from '../../transports/memory/prng.ts'

/** Largest input a mutation makes. */
export const MAX_INPUT_BYTES = 256 * 1024

/** Counts and lengths that should never be trusted, as numbers (for structure-aware inputs). */
export const HUGE_VALUES = [2 ** 53 - 1, 2 ** 32, 2 ** 31 - 1, 64 * 1024 * 1024, 32 * 1024 * 1024, 16 * 1024 * 1024, 1024 * 1024, 65536]

/** LEB128 encodings of counts and lengths that should never be trusted. */
const HUGE = [
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], // 2^53 - 1
  [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10], // 2^53, one over
  [0x80, 0x80, 0x80, 0x80, 0x10], // 2^32
  [0xff, 0xff, 0xff, 0xff, 0x07], // 2^31 - 1
  [0x80, 0x80, 0x80, 0x10], // 32 Mi (the size of the CHUNK attack)
  [0x80, 0x80, 0x40], // 1 Mi
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // longer than any varuint
]

/** The names of the byte mutations, in the order they are drawn from. */
export const MUTATIONS = ['random', 'valid', 'truncate', 'flip', 'huge', 'huge-overwrite', 'grow', 'splice', 'fill'] as const

/** What {@link mutateInput} needs of a target. */
export interface Mutable {
  /** The encodings end in a CRC-32 of what precedes (then the body is mutated and sealed again, most times). */
  readonly sealed?: boolean
  /**
   * Seals a mutated body (default: its CRC-32 appended). A format whose
   * checksum also covers bytes it does not store (a version 4 record's name
   * and seq, a version 4 metadata's name: its key's) reseals with them, or
   * every mutation would stop at the checksum.
   */
  reseal?(body: Uint8Array): Uint8Array
  /** Structure-aware inputs: valid framing, huge counts and lengths in the fields, deep nesting. */
  adversarial?(random: Prng): Uint8Array
}

/**
 * Makes one input for `target`: a structure-aware adversarial one (a quarter
 * of the time, when the target has them), else a byte mutation of a seed;
 * for a sealed format, most often of its body, sealed again with a correct
 * checksum so that the decoder gets past it.
 */
export function mutateInput(
  random: Prng,
  seeds: readonly Uint8Array[],
  target: Mutable,
  plainSeal: (body: Uint8Array) => Uint8Array,
): { mutation: string; input: Uint8Array } {
  const seal = target.reseal ? (body: Uint8Array) => target.reseal!(body) : plainSeal
  if (target.adversarial && random.chance(0.25)) {
    const input = target.adversarial(random)
    return { mutation: 'adversarial', input: target.sealed ? seal(input) : input }
  }
  if (target.sealed && random.chance(0.7)) {
    const { mutation, input } = mutateBytes(
      random,
      seeds.map((seed) => seed.subarray(0, Math.max(0, seed.length - 4))),
    )
    return { mutation: `${mutation}, sealed`, input: seal(input) }
  }
  return mutateBytes(random, seeds)
}

/** A byte mutation of one of `seeds`. */
function mutateBytes(random: Prng, seeds: readonly Uint8Array[]): { mutation: string; input: Uint8Array } {
  const mutation = random.pick(MUTATIONS)
  const seed = seeds.length > 0 ? random.pick(seeds) : new Uint8Array(0)
  const at = (bytes: Uint8Array) => random.int(0, bytes.length)
  switch (mutation) {
    case 'random': {
      const length = random.chance(0.8) ? random.int(0, 64) : random.int(0, 4096)
      return { mutation, input: new Uint8Array(length).map(() => random.int(0, 255)) }
    }
    case 'valid':
      return { mutation, input: seed }
    case 'truncate':
      return { mutation, input: seed.slice(0, random.int(0, Math.max(0, seed.length - 1))) }
    case 'flip': {
      const input = seed.slice()
      for (let n = random.int(1, 8); n > 0 && input.length > 0; n--) input[random.int(0, input.length - 1)] ^= 1 << random.int(0, 7)
      return { mutation, input }
    }
    case 'huge':
    case 'huge-overwrite': {
      const huge = random.pick(HUGE)
      const where = at(seed)
      const skip = mutation === 'huge-overwrite' ? random.int(1, 8) : 0
      const input = new Uint8Array([...seed.subarray(0, where), ...huge, ...seed.subarray(Math.min(seed.length, where + skip))])
      return { mutation, input }
    }
    case 'grow': {
      // A part repeated: counts that match the bytes that remain, long lists, deep nesting of repeated prefixes.
      const start = at(seed)
      const end = Math.min(seed.length, start + random.int(1, 64))
      const part = seed.subarray(start, end)
      if (part.length === 0) return { mutation, input: seed }
      const times = Math.floor(random.int(1, MAX_INPUT_BYTES) / part.length)
      const input = new Uint8Array(Math.min(MAX_INPUT_BYTES, seed.length + part.length * times))
      input.set(seed.subarray(0, end))
      let offset = end
      for (let i = 0; i < times && offset + part.length <= input.length; i++, offset += part.length) input.set(part, offset)
      input.set(seed.subarray(end, end + (input.length - offset)), offset)
      return { mutation, input }
    }
    case 'splice': {
      const other = random.pick(seeds.length > 0 ? seeds : [seed])
      return { mutation, input: new Uint8Array([...seed.subarray(0, at(seed)), ...other.subarray(at(other))]) }
    }
    case 'fill': {
      const input = seed.slice()
      const start = at(input)
      input.fill(random.chance(0.5) ? 0xff : 0x00, start, Math.min(input.length, start + random.int(1, 32)))
      return { mutation, input }
    }
  }
}
