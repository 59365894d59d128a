/** Comparing the replicas of several peers: values and versions. */
import { createReplica } from '../../../crdt/registry.ts'
import type { Replica } from '../../../crdt/replica.ts'

/** A peer's replicas, by name. */
export interface Holder {
  readonly name: string
  readonly replicas: ReadonlyMap<string, Replica>
}

/** The first difference of value or version between the holders, or undefined when all are equal. */
export function firstDifference(holders: readonly Holder[]): string | undefined {
  const [first, ...rest] = holders
  for (const other of rest) {
    for (const [name, a] of first.replicas) {
      const b = other.replicas.get(name)
      if (!b) return `${other.name} lacks ${name}`
      const [va, vb] = [JSON.stringify(a.value()), JSON.stringify(b.value())]
      if (va !== vb) return `${name}: ${first.name} has ${va}, ${other.name} has ${vb}`
      if (!sameBytes(a.version(), b.version())) return `${name}: versions of ${first.name} and ${other.name} differ`
      if (lacks(a, b) || lacks(b, a)) return `${name}: ${first.name} and ${other.name} still lack something of each other`
    }
  }
  return undefined
}

/**
 * Whether `a` lacks something of `b`: what `b` would send it changes a copy
 * of `a` (a Yjs delta always carries the delete set, so non-null alone says
 * nothing).
 */
export function lacks(a: Replica, b: Replica): boolean {
  const delta = b.deltaSince(a.version())
  if (delta === null) return false
  const copy = createReplica(a.type, { agentId: a.agentId, snapshot: a.snapshot() })
  return copy.applyDelta(delta)
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
