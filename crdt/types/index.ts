/**
 * The native delta-state CRDTs: replicas (the user handles), typed views for
 * nested map fields, and the pure functional cores (mutators returning
 * deltas, `joinStates`, the codecs).
 */
export {
  GCounterReplica,
  PNCounterReplica,
  GSetReplica,
  ORSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  EWFlagReplica,
  ORMapReplica,
  nativeReplicaFactories,
} from './replicas.ts'
export { CausalReplica, joinStates } from './causal-replica.ts'
export { mergeNativeDeltas } from './merge-deltas.ts'
export { GCounterView, PNCounterView, GSetView, ORSetView, EWFlagView, MVRegisterView, LWWRegisterView, ORMapView } from './views.ts'
export { DotAllocator } from './dot-allocator.ts'
export { canonicalJson, parseCanonicalJson, compareJson, copyJson, MAX_JSON_DEPTH, type Json } from './json.ts'
export {
  NATIVE_TYPES,
  STORE_SPECS,
  isNativeType,
  typeCode,
  fieldKey,
  parseFieldKey,
  FIELD_SEPARATOR,
  type NativeType,
  type StoreSpec,
  type ValueCodec,
  type PnTotals,
  type LwwWrite,
} from './store-spec.ts'
export {
  encodeState,
  decodeState,
  encodeVersion,
  decodeVersion,
  STATE_FORMAT_VERSION,
  MAX_NESTING,
  type CausalState,
  type NativeVersion,
} from './state-codec.ts'
export type { NativeTypeDef } from './type-def.ts'
export {
  gcounterIncrement,
  gcounterValue,
  pncounterChange,
  pncounterValue,
  gcounterDef,
  pncounterDef,
  type GCounterStore,
  type PNCounterStore,
} from './counters.ts'
export { orsetAdd, orsetRemove, gsetAdd, setHas, setValues, orsetDef, gsetDef, type SetStore } from './sets.ts'
export { flagEnable, flagDisable, flagEnabled, ewflagDef } from './flag.ts'
export {
  mvWrite,
  mvValues,
  lwwWrite,
  lwwValue,
  lwwWinner,
  registerClear,
  mvRegisterDef,
  lwwRegisterDef,
  type MVRegisterStore,
  type LWWRegisterStore,
} from './registers.ts'
export { mapGet, mapKeys, mapValue, mapRemove, mapFieldTags, wrapField, ormapDef, TYPE_DEFS, FIELD_PRECEDENCE } from './ormap.ts'
