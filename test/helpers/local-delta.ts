/**
 * The delta bytes of a local change, for tests that ship it by hand:
 * mutators return whether they changed anything, and the delta goes to the
 * replica's `change` listeners (read here through `recordLocal`).
 */
import type { Replica } from '../../crdt/replica.ts'
import { recordLocal } from '../../testing/crdt-laws.ts'

/** The delta of the local change `mutate` makes to `replica`, or null when it makes none; throws when it makes several. */
export function localDelta(replica: Replica, mutate: () => unknown): Uint8Array | null {
  const deltas = recordLocal(replica, () => {
    mutate()
  })
  if (deltas.length > 1) throw new Error(`expected at most one local change, got ${deltas.length}`)
  return deltas[0] ?? null
}
