/**
 * The CRDT law suite (concord-crdt/testing) run against the eight native delta-state types
 * (nested ORMap operations included), with a deterministic clock.
 */
import { describe, it } from 'node:test'
import { NATIVE_TYPES } from '../../crdt/catalog.ts'
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
