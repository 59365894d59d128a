/**
 * The CRDT law suite (concord-crdt/testing) run against the eight native delta-state types
 * (nested ORMap operations included), with a deterministic clock.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { NATIVE_TYPES } from '../../crdt/catalog.ts'
import { replicaDigest, stateDigest } from '../../crdt/state-digest.ts'
import { runCrdtLaws } from '../../testing/index.ts'
import { createNative, nativeOp } from './native-ops.ts'

for (const type of NATIVE_TYPES) {
  runCrdtLaws(
    { describe, it },
    {
      type,
      create: (id) => createNative(type, id),
      load: (snapshot, id) => createNative(type, id, snapshot),
      randomOp: nativeOp(type),
      corruptionAlwaysDetected: true,
    },
  )
}

// crdt/state-digest.ts skips `deltaSince(version())` for a type that says it is null in every state (Replica.ownVersionComplete).
describe('native types: deltaSince(version()) is null in every state (ownVersionComplete)', () => {
  for (const type of NATIVE_TYPES) {
    it(type, () => {
      fc.assert(
        fc.property(
          fc.array(nativeOp(type), { maxLength: 12 }),
          fc.array(nativeOp(type), { maxLength: 12 }),
          fc.array(nativeOp(type), { maxLength: 6 }),
          (first, other, after) => {
            const a = createNative(type, 'a')
            const b = createNative(type, 'b')
            for (const op of first) op(a)
            for (const op of other) op(b)
            const delta = b.deltaSince(a.version())
            if (delta !== null) a.applyDelta(delta)
            for (const op of after) op(a)
            assert.equal(a.ownVersionComplete, true)
            for (const replica of [a, b, createNative(type, 'c', a.snapshot())]) {
              assert.equal(replica.deltaSince(replica.version()), null)
              const version = replica.version()
              assert.deepEqual(replicaDigest('n', replica), stateDigest('n', type, version, replica.deltaSince(version)))
            }
          },
        ),
        { numRuns: 40 },
      )
    })
  }
})
