/**
 * `defineNativeType`: what a native type's file calls to make the
 * definition the catalog lists (crdt/catalog.ts; recipe in
 * docs/adding-a-type.md). It adds the replica factory every native type
 * shares: `create` from the type's class, and the merge of its deltas.
 */
import type { NativeType } from '../catalog.ts'
import type { DotStore } from '../causal/dot-store.ts'
import type { ReplicaFactory } from '../replica.ts'
import { mergeNativeDeltas } from './merge-deltas.ts'
import type { NativeTypeDef, NativeTypeSpec } from './native-type.ts'

/** Makes a native type's definition from its spec (checks the code is one byte, 1..255). */
export function defineNativeType<S extends DotStore, const Tag extends string>(spec: NativeTypeSpec<S, Tag>): NativeTypeDef<S, Tag> {
  if (!Number.isInteger(spec.code) || spec.code < 1 || spec.code > 255) throw new RangeError(`native type ${spec.tag}: code must be 1..255`)
  const factory: ReplicaFactory = {
    type: spec.tag as ReplicaFactory['type'],
    create: (options) => spec.create(options),
    mergeDeltas: (deltas) => mergeNativeDeltas(spec.tag as NativeType, deltas),
  }
  return { ...spec, kind: 'native', factory }
}
