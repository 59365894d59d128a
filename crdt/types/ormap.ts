/**
 * ORMap as a causal CRDT: a dot map from field key to the nested store of
 * that field, all fields sharing the map's one causal context. A field key
 * is `tag/name` (see {@link fieldKey}): the type of the nested CRDT is part
 * of the key, so concurrent puts of different types under one name never
 * clash; they live side by side.
 *
 * - A nested mutation's delta is the child's delta under its key, with the
 *   child delta's context.
 * - delete(name) is observed-remove: an empty store whose context holds the
 *   dots of every field under that name. A concurrent update of the field
 *   (a dot the remover did not see) survives: update wins.
 * - A field whose nested store becomes empty disappears (a disabled flag,
 *   an emptied set, a cleared register).
 *
 * restore(past) rewrites what differs field by field; a grow-only field
 * (gcounter, gset) that must shrink is replaced (its dots removed and the
 * past value rebuilt with new dots), which a map can do and a top-level
 * grow-only replica cannot.
 *
 * Value: `{ name: value }` with names sorted. When one name holds fields of
 * several types, the value shows one of them, chosen by the fixed order
 * {@link FIELD_PRECEDENCE} (an LWW value set with `map.set` first); the
 * others stay reachable through the typed accessors.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotMap, storeDots, type DotStore } from '../causal/dot-store.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../errors.ts'
import type { HybridClock } from '../hlc.ts'
import { gcounterDef, pncounterDef } from './counters.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { ewflagDef } from './flag.ts'
import type { Json } from './json.ts'
import { lwwRegisterDef, mvRegisterDef } from './registers.ts'
import { gsetDef, orsetDef } from './sets.ts'
import type { CausalState } from './state-codec.ts'
import { fieldKey, parseFieldKey, type NativeType } from './store-spec.ts'
import type { NativeTypeDef } from './type-def.ts'

/** Which field shows in `value()` when one name holds several types (first present wins). */
export const FIELD_PRECEDENCE: readonly NativeType[] = ['lww-register', 'mv-register', 'pncounter', 'gcounter', 'orset', 'gset', 'ormap', 'ewflag']

/** The fields of a map by name: type tag -> nested store. */
function fieldsByName(store: DotMap): Map<string, Map<NativeType, DotStore>> {
  const out = new Map<string, Map<NativeType, DotStore>>()
  for (const [key, child] of store.entries) {
    const field = parseFieldKey(key)
    if (!field) continue
    let byTag = out.get(field.name)
    if (!byTag) out.set(field.name, (byTag = new Map()))
    byTag.set(field.tag, child)
  }
  return out
}

/** The names present in the map, sorted. */
export function mapKeys(store: DotMap): string[] {
  return [...fieldsByName(store).keys()].sort()
}

/** The tags of the fields under `name`. */
export function mapFieldTags(store: DotMap, name: string): NativeType[] {
  return FIELD_PRECEDENCE.filter((tag) => store.entries.has(fieldKey(tag, name)))
}

/** The value shown for `name` (see {@link FIELD_PRECEDENCE}), or undefined when absent. */
export function mapGet(store: DotMap, name: string): Json | undefined {
  for (const tag of FIELD_PRECEDENCE) {
    const child = store.entries.get(fieldKey(tag, name))
    if (child) return TYPE_DEFS[tag].value(child)
  }
  return undefined
}

/** The whole map as a plain object (names sorted). */
export function mapValue(store: DotMap): { [name: string]: Json } {
  return Object.fromEntries(mapKeys(store).map((name) => [name, mapGet(store, name)!]))
}

/** Wraps a child's delta as a delta of the map holding it under `key`. */
export function wrapField(key: string, child: CausalState): CausalState<DotMap> {
  const store = new DotMap()
  store.setChild(key, child.store)
  return { store, ctx: child.ctx }
}

/** Delta removing every field under `name` (observed-remove), or null when absent. */
export function mapRemove(store: DotMap, name: string): CausalState<DotMap> | null {
  const ctx = new CausalContext()
  for (const tag of FIELD_PRECEDENCE) {
    const child = store.entries.get(fieldKey(tag, name))
    if (child) for (const d of storeDots(child)) ctx.add(d)
  }
  return ctx.isEmpty ? null : { store: new DotMap(), ctx }
}

function restoreMap(current: DotMap, past: DotMap, alloc: DotAllocator, clock: HybridClock): CausalState<DotMap> | null {
  const store = new DotMap()
  const ctx = new CausalContext()
  const keys = new Set([...current.entries.keys(), ...past.entries.keys()])
  for (const key of [...keys].sort()) {
    const field = parseFieldKey(key)
    if (!field) continue
    const def = TYPE_DEFS[field.tag]
    const mine = current.entries.get(key)
    const theirs = past.entries.get(key)
    if (!theirs) {
      for (const d of storeDots(mine!)) ctx.add(d)
      continue
    }
    let delta: CausalState | null
    try {
      delta = def.restore(mine ?? def.empty(), theirs, alloc, clock)
    } catch (error) {
      if (!mine || !isConcordError(error, ErrorCodes.INVALID_ARGUMENT)) throw error
      // A grow-only field asked to shrink: the map replaces it (observed-remove
      // of its dots, and the past value rebuilt with new dots, in one delta).
      for (const d of storeDots(mine)) ctx.add(d)
      delta = def.restore(def.empty(), theirs, alloc, clock)
    }
    if (!delta) continue
    store.setChild(key, delta.store)
    ctx.join(delta.ctx)
  }
  return ctx.isEmpty ? null : { store, ctx }
}

/** ORMap behaviour. */
export const ormapDef: NativeTypeDef<DotMap> = {
  tag: 'ormap',
  empty: () => new DotMap(),
  value: mapValue,
  restore: restoreMap,
  observe(store, clock) {
    for (const [key, child] of store.entries) {
      const field = parseFieldKey(key)
      if (field) TYPE_DEFS[field.tag].observe?.(child, clock)
    }
  },
}

/** The behaviour of every native type, by tag. */
export const TYPE_DEFS: Readonly<Record<NativeType, NativeTypeDef>> = {
  gcounter: gcounterDef as NativeTypeDef,
  pncounter: pncounterDef as NativeTypeDef,
  gset: gsetDef as NativeTypeDef,
  orset: orsetDef as NativeTypeDef,
  'lww-register': lwwRegisterDef as NativeTypeDef,
  'mv-register': mvRegisterDef as NativeTypeDef,
  ormap: ormapDef as NativeTypeDef,
  ewflag: ewflagDef as NativeTypeDef,
}

/** Throws `CONCORD_INVALID_ARGUMENT` unless `name` is a usable field name (a string). */
export function checkFieldName(name: unknown): asserts name is string {
  if (typeof name !== 'string') throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'ormap: a field name must be a string')
}
