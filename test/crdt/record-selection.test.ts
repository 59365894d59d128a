/**
 * crdt/record-selection.ts, over random histories of every native type,
 * of Yjs and of Automerge: agent A logs one delta per change; B holds a prefix of them and
 * changes of its own. `covers` is exact: whenever it says a run of A's
 * deltas (and its residual) brings what B lacks, B with them equals B with
 * A's merged state; and the run of every delta B lacks is always enough.
 * `lacks(d) === false` only for a delta that adds nothing to B.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { NATIVE_TYPES, type NativeType } from '../../crdt/catalog.ts'
import { bytesEqual } from '../../crdt/codec.ts'
import { recordSelector } from '../../crdt/record-selection.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { recordLocal, type RandomOp } from '../../testing/index.ts'
import { automergeOp, opsInitial, yjsOp } from './documents/document-ops.ts'
import { createNative, nativeOp } from './native-ops.ts'

const isDocument = (type: ReplicaType) => type === 'yjs' || type === 'automerge'

function clone(type: ReplicaType, replica: Replica, id: string): Replica {
  return isDocument(type)
    ? createReplica(type, { agentId: id as never, snapshot: replica.snapshot() })
    : createNative(type as NativeType, id, replica.snapshot())
}

function fresh(type: ReplicaType, id: string): Replica {
  if (type === 'automerge') return createReplica(type, { agentId: id as never, initial: opsInitial() } as never)
  return type === 'yjs' ? createReplica(type, { agentId: id as never }) : createNative(type as NativeType, id)
}

function sameState(a: Replica, b: Replica): boolean {
  return bytesEqual(a.version(), b.version()) && JSON.stringify(a.value()) === JSON.stringify(b.value())
}

const cases: Array<{ type: ReplicaType; op: fc.Arbitrary<RandomOp> }> = [
  ...NATIVE_TYPES.map((type) => ({ type, op: nativeOp(type) })),
  { type: 'yjs' as ReplicaType, op: yjsOp as fc.Arbitrary<RandomOp> },
  { type: 'automerge' as ReplicaType, op: automergeOp as fc.Arbitrary<RandomOp> },
]

for (const { type, op } of cases) {
  test(`record selection of ${type}: covers is exact, the run of what the remote lacks covers, lacks false means nothing to add`, () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 12 }), fc.array(op, { maxLength: 4 }), fc.nat(), (ops, theirs, cut) => {
        const a = fresh(type, 'A')
        const logged: Uint8Array[] = []
        for (const change of ops) logged.push(...recordLocal(a, () => change(a)))
        const held = logged.length === 0 ? 0 : cut % (logged.length + 1)
        const b = fresh(type, 'B')
        for (const delta of logged.slice(0, held)) b.applyDelta(delta)
        for (const change of theirs) change(b)
        const since = b.version()
        const lack = a.deltaSince(since)
        if (lack === null) return
        const selector = recordSelector(type, since, lack, () => fresh(type, 'S'))
        assert.ok(selector)
        const merged = clone(type, b, 'B')
        merged.applyDelta(lack)
        for (let from = 0; from <= logged.length; from++) {
          const { covered, residual } = selector.covers(logged.slice(from))
          if (from <= held) assert.ok(covered, `the run from ${from} holds every delta B lacks (held ${held})`)
          if (!covered) continue
          const taken = clone(type, b, 'B')
          for (const delta of logged.slice(from)) taken.applyDelta(delta)
          if (residual) taken.applyDelta(residual)
          assert.ok(sameState(taken, merged), `the run from ${from} said to cover brings what merged state brings`)
        }
        for (const delta of logged) {
          if (selector.lacks(delta) === false) assert.equal(clone(type, b, 'B').applyDelta(delta), false, 'a delta B is said to hold adds nothing')
        }
      }),
      { numRuns: 150 },
    )
  })
}
