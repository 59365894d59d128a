/**
 * ORMap as a causal CRDT: a dot map from field key to the nested store of
 * that field, all fields sharing the map's one causal context. A field key
 * is `tag/name` (see {@link fieldKey}): the type of the nested CRDT is part
 * of the key, so concurrent puts of different types under one name never
 * clash; they live side by side. Every native type of the catalog can be a
 * field (crdt/catalog.ts): its file declares its typed accessor on
 * {@link ORMapFields} (`map.counter(name)`), which the catalog installs.
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
 * several types, the value shows one of them, the one of lowest
 * `precedence` (an LWW value set with `map.set` first); the others stay
 * reachable through the typed accessors.
 */
import type { NativeType } from '../catalog.ts'
import { CausalContext } from '../causal/causal-context.ts'
import { DotMap, storeDots } from '../causal/dot-store.ts'
import { ConcordError, DecodeError, ErrorCodes, isConcordError } from '../errors.ts'
import type { HybridClock } from '../hlc.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { defineNativeType } from './define-native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { copyJson, type Json } from './json.ts'
import { fieldKey, nativeTypes, parseFieldKey, type NativeTypeDef, type StoreSpec } from './native-type.ts'
import { MAX_NESTING, type CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** The names present in the map, sorted. */
export function mapKeys(store: DotMap): string[] {
  const names = new Set<string>()
  for (const key of store.entries.keys()) {
    const field = parseFieldKey(key)
    if (field) names.add(field.name)
  }
  return [...names].sort()
}

/** The tags of the fields under `name`, by precedence. */
export function mapFieldTags(store: DotMap, name: string): NativeType[] {
  return nativeTypes
    .byPrecedence()
    .filter((def) => store.entries.has(fieldKey(def.tag, name)))
    .map((def) => def.tag as NativeType)
}

/** The value shown for `name` (the field of lowest precedence), or undefined when absent. */
export function mapGet(store: DotMap, name: string): Json | undefined {
  for (const def of nativeTypes.byPrecedence()) {
    const child = store.entries.get(fieldKey(def.tag, name))
    if (child) return def.value(child)
  }
  return undefined
}

/** The whole map as a plain object (names sorted). */
export function mapValue(store: DotMap): { [name: string]: Json } {
  return Object.fromEntries(mapKeys(store).map((name) => [name, mapGet(store, name)!]))
}

/** Delta removing every field under `name` (observed-remove), or null when absent. */
export function mapRemove(store: DotMap, name: string): CausalState<DotMap> | null {
  const ctx = new CausalContext()
  for (const def of nativeTypes.byPrecedence()) {
    const child = store.entries.get(fieldKey(def.tag, name))
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
    const def = nativeTypes.of(field.tag)
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

/** A map's keys are field keys `tag/name`; under each, the store of that tag. */
const mapSpec: StoreSpec = {
  kind: 'map',
  child(key) {
    const field = parseFieldKey(key)
    if (!field) throw new DecodeError(`ormap: bad field key`)
    return nativeTypes.of(field.tag).spec
  },
}

/** ORMap: the catalog's entry. */
export const ormapType: NativeTypeDef<DotMap, 'ormap'> = defineNativeType({
  tag: 'ormap',
  code: 7,
  spec: mapSpec,
  precedence: 7,
  opener: 'map',
  holdsFields: true,
  field: { accessor: 'map', view: (owner, path) => new ORMapView(owner, path) },
  create: (options) => new ORMapReplica(options),
  empty: () => new DotMap(),
  value: mapValue,
  restore: restoreMap,
  observe(store, clock) {
    for (const [key, child] of store.entries) {
      const field = parseFieldKey(key)
      if (field) nativeTypes.of(field.tag).observe?.(child, clock)
    }
  },
})

/** Throws `CONCORD_INVALID_ARGUMENT` unless `name` is a usable field name (a string). */
export function checkFieldName(name: unknown): asserts name is string {
  if (typeof name !== 'string') throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'ormap: a field name must be a string')
}

/**
 * The typed accessors of an ORMap's fields (`map.counter(name)`), one per
 * native type that can be a field: each type's file declares its own here
 * (`declare module './ormap.ts' { interface ORMapFields { ... } }`) and the
 * catalog installs it ({@link installFieldType}).
 */
export interface ORMapFields {
  /** The nested map field `name`. */
  map(name: string): ORMapView
}

export interface ORMapView extends ORMapFields {}

/** An observed-remove map whose fields are nested CRDTs. */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: its field accessors (ORMapFields) are installed by installFieldType
export class ORMapView extends View {
  /** @internal the path of field `name` of type `tag` under this map (the installed accessors use it). */
  fieldPath(tag: string, name: string): string[] {
    checkFieldName(name)
    if (this.path.length + 1 > MAX_NESTING) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `ormap: fields nest at most ${MAX_NESTING} levels deep`)
    }
    return [...this.path, fieldKey(tag, name)]
  }

  /** @internal the replica that holds this map. */
  get holder(): CausalReplica {
    return this.owner
  }

  /** Sets `name` to a JSON value (an LWW register field). */
  set(name: string, value: Json): boolean {
    return this.register(name).set(value)
  }

  /** The value shown for `name` (the field of lowest precedence), or undefined. */
  get(name: string): Json | undefined {
    checkFieldName(name)
    const value = mapGet(this.store<DotMap>(), name)
    return value === undefined ? undefined : copyJson(value)
  }

  /** Removes every field under `name`, as observed here (false when absent). */
  delete(name: string): boolean {
    checkFieldName(name)
    return this.change<DotMap>((store) => mapRemove(store, name))
  }

  /** Whether any field is under `name`. */
  has(name: string): boolean {
    checkFieldName(name)
    return mapFieldTags(this.store<DotMap>(), name).length > 0
  }

  /** The names present, sorted. */
  keys(): string[] {
    return mapKeys(this.store<DotMap>())
  }

  /** The types of the fields under `name` (several after concurrent puts of different types). */
  fieldTypes(name: string): NativeType[] {
    checkFieldName(name)
    return mapFieldTags(this.store<DotMap>(), name)
  }

  /** The whole map as a plain object. */
  toJSON(): { [name: string]: Json } {
    return mapValue(this.store<DotMap>())
  }
}

export interface ORMapReplica extends ORMapFields {}

/** Observed-remove map of nested CRDTs; see the module comment for the semantics and {@link ORMapView} for the API. */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: its field accessors (ORMapFields) are installed by installFieldType
export class ORMapReplica extends CausalReplica<DotMap> {
  /** The map's API (also reachable through the methods below). */
  readonly root = new ORMapView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(ormapType, options)
  }
  /** Sets `name` to a JSON value (an LWW register field). */
  set(name: string, value: Json): boolean {
    return this.root.set(name, value)
  }
  /** The value shown for `name`, or undefined. */
  get(name: string): Json | undefined {
    return this.root.get(name)
  }
  /** Removes every field under `name` as observed here. */
  delete(name: string): boolean {
    return this.root.delete(name)
  }
  /** Whether any field is under `name`. */
  has(name: string): boolean {
    return this.root.has(name)
  }
  /** The names present, sorted. */
  keys(): string[] {
    return this.root.keys()
  }
  /** The types of the fields under `name`. */
  fieldTypes(name: string): NativeType[] {
    return this.root.fieldTypes(name)
  }
  /** The whole map as a plain object. */
  override value(): { [name: string]: Json } {
    return this.root.toJSON()
  }
}

/**
 * Installs the typed accessor of `def`'s fields on {@link ORMapView} and
 * {@link ORMapReplica} (the catalog calls it for each native type with a
 * `field`). Throws when the accessor's name is taken.
 */
export function installFieldType(def: NativeTypeDef): void {
  const field = def.field
  if (!field) return
  const { accessor, view } = field
  if (accessor in ORMapView.prototype || accessor in ORMapReplica.prototype) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `ormap: the field accessor "${accessor}" of "${def.tag}" is taken`)
  }
  Object.defineProperty(ORMapView.prototype, accessor, {
    configurable: true,
    writable: true,
    value(this: ORMapView, name: string) {
      return view(this.holder, this.fieldPath(def.tag, name))
    },
  })
  Object.defineProperty(ORMapReplica.prototype, accessor, {
    configurable: true,
    writable: true,
    value(this: ORMapReplica, name: string) {
      return (this.root as unknown as Record<string, (name: string) => unknown>)[accessor](name)
    },
  })
}

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** An observed-remove map whose values are nested CRDTs. */
    map(name: string, options?: O): Promise<ORMapReplica>
  }
}
