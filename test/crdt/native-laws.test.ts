/**
 * The shared law suite run against the eight native delta-state types
 * (nested ORMap operations included), with a deterministic clock.
 */
import { NATIVE_TYPES } from '../../crdt/types/store-spec.ts'
import { lawSuite } from './law-suite.ts'
import { createNative, nativeOp } from './native-ops.ts'

for (const type of NATIVE_TYPES) {
  lawSuite({
    type,
    create: (id) => createNative(type, id),
    load: (snapshot, id) => createNative(type, id, snapshot),
    randomOp: nativeOp(type),
    corruptionAlwaysDetected: true,
  })
}
