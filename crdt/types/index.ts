/**
 * The native delta-state CRDTs, one file per type (core, store codec, view,
 * replica class; the catalog, crdt/catalog.ts, lists them), and the
 * machinery they share: the causal replica, the state codec, the native
 * type table, the merge of deltas, canonical JSON. Importing it loads the
 * catalog (which fills the native type table the codec and ORMap read).
 */
import '../catalog.ts'
export { GCounterReplica, GCounterView, gcounterIncrement, gcounterValue, gcounterType, type GCounterStore } from './gcounter.ts'
export { PNCounterReplica, PNCounterView, pncounterChange, pncounterValue, pncounterType, type PNCounterStore, type PnTotals } from './pncounter.ts'
export { GSetReplica, GSetView, gsetAdd, gsetType } from './gset.ts'
export { ORSetReplica, ORSetView, orsetAdd, orsetRemove, orsetType } from './orset.ts'
export { setHas, setValues, type SetStore } from './set-core.ts'
export { LWWRegisterReplica, LWWRegisterView, lwwWrite, lwwValue, lwwWinner, lwwRegisterType, type LWWRegisterStore, type LwwWrite } from './lww-register.ts'
export { MVRegisterReplica, MVRegisterView, mvWrite, mvValues, mvRegisterType, type MVRegisterStore } from './mv-register.ts'
export { registerClear } from './register-core.ts'
export { EWFlagReplica, EWFlagView, flagEnable, flagDisable, flagEnabled, ewflagType } from './ewflag.ts'
export { ORMapReplica, ORMapView, mapGet, mapKeys, mapValue, mapRemove, mapFieldTags, ormapType, type ORMapFields } from './ormap.ts'
export { CausalReplica, joinStates } from './causal-replica.ts'
export { mergeNativeDeltas } from './merge-deltas.ts'
export { View } from './view.ts'
export { DotAllocator } from './dot-allocator.ts'
export { canonicalJson, parseCanonicalJson, compareJson, copyJson, MAX_JSON_DEPTH, type Json } from './json.ts'
export {
  nativeTypes,
  fieldKey,
  parseFieldKey,
  wrapField,
  FIELD_SEPARATOR,
  type NativeTypeDef,
  type NativeTypeSpec,
  type StoreSpec,
  type ValueCodec,
} from './native-type.ts'
export { defineNativeType } from './define-native-type.ts'
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
