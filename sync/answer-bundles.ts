/**
 * How an anti-entropy answer's merged state is bundled into TRANSACTIONs
 * (sync/PROTOCOL.md "Bounded answers"): the names that may share a unit
 * together, the others in small bundles that the receiver applies and makes
 * durable one at a time.
 */
import { WIRE_LIMITS, type DeltaEntry } from './messages.ts'

/**
 * An anti-entropy answer travels as few TRANSACTIONs as possible: the names
 * it carries are bundled (up to this many delta bytes per bundle) so that
 * the receiver applies them all or none. A multi-name transaction whose
 * names were answered separately could otherwise land half on a receiver
 * that crashes between them.
 */
export const ANSWER_BUNDLE_BYTES = 16 * 1024 * 1024

/**
 * Names that never shared a unit on this side (the host's `joints` says
 * so) need no bundle of their own kind: they travel in bundles of at most
 * this many names and {@link INDEPENDENT_BUNDLE_BYTES} delta bytes, each
 * applied and made durable on its own, so that a receiver of a first sync
 * holds one bundle's names at a time, not every name (its memory is
 * bounded by its cache). The names that did share a unit (joint) stay in
 * bundles as above, all of them together.
 */
export const INDEPENDENT_BUNDLE_NAMES = 128
/** See {@link INDEPENDENT_BUNDLE_NAMES}. */
export const INDEPENDENT_BUNDLE_BYTES = 1024 * 1024

/** Groups deltas, in order, into bundles of up to `maxBytes` delta bytes and `maxEntries` entries. */
export function group(deltas: readonly DeltaEntry[], maxBytes: number, maxEntries: number): DeltaEntry[][] {
  const answer: DeltaEntry[][] = []
  let current: DeltaEntry[] = []
  let bytes = 0
  for (const entry of deltas) {
    if (current.length > 0 && (bytes + entry.delta.length > maxBytes || current.length >= maxEntries)) {
      answer.push(current)
      current = []
      bytes = 0
    }
    current.push(entry)
    bytes += entry.delta.length
  }
  if (current.length > 0) answer.push(current)
  return answer
}

/**
 * Bundles the merged state of an answer: the names that may share a unit
 * (`joint`; every name without it) in bundles of up to
 * {@link ANSWER_BUNDLE_BYTES} delta bytes and `WIRE_LIMITS.maxEntries`
 * entries, the others in bundles of {@link INDEPENDENT_BUNDLE_NAMES} names
 * and {@link INDEPENDENT_BUNDLE_BYTES}, in order. A transaction is thus
 * never split across bundles: its names are all joint.
 */
export function bundle(
  deltas: readonly DeltaEntry[],
  joint: ((name: string) => boolean) | undefined,
): { readonly bundles: DeltaEntry[][]; readonly independent: DeltaEntry[][] } {
  if (joint === undefined) return { bundles: group(deltas, ANSWER_BUNDLE_BYTES, WIRE_LIMITS.maxEntries), independent: [] }
  const together: DeltaEntry[] = []
  const apart: DeltaEntry[] = []
  for (const entry of deltas) (joint(entry.name) ? together : apart).push(entry)
  return {
    bundles: group(together, ANSWER_BUNDLE_BYTES, WIRE_LIMITS.maxEntries),
    independent: group(apart, INDEPENDENT_BUNDLE_BYTES, INDEPENDENT_BUNDLE_NAMES),
  }
}
