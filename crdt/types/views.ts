/**
 * Typed handles on a native CRDT at a path inside a replica: the top-level
 * replicas use them at the empty path, and an ORMap hands them out for its
 * nested fields (`map.counter('done').increment()`). Every mutation becomes
 * one delta of the replica that owns the handle (so a nested change is a
 * delta of the whole map) and returns true, or false when there was nothing
 * to do; the delta itself goes to the replica's `change` listeners.
 */
import type { DotMap, DotSet, DotStore } from '../causal/dot-store.ts'
import { ConcordError, ErrorCodes } from '../errors.ts'
import type { CausalReplica } from './causal-replica.ts'
import { gcounterIncrement, gcounterValue, pncounterChange, pncounterValue, type GCounterStore, type PNCounterStore } from './counters.ts'
import { flagDisable, flagEnable, flagEnabled } from './flag.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { copyJson, type Json } from './json.ts'
import { checkFieldName, mapFieldTags, mapGet, mapKeys, mapRemove, mapValue } from './ormap.ts'
import { lwwValue, lwwWrite, mvValues, mvWrite, registerClear, type LWWRegisterStore, type MVRegisterStore } from './registers.ts'
import { gsetAdd, orsetAdd, orsetRemove, setHas, setValues, type SetStore } from './sets.ts'
import { MAX_NESTING, type CausalState } from './state-codec.ts'
import { fieldKey, type NativeType } from './store-spec.ts'

/** Checks a counter amount: a non-negative safe integer; 0 means "nothing to do". */
function amount(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `counter: the amount must be a non-negative safe integer, got ${n}`)
  return n
}

/** Common part of every handle: the owning replica and the path of field keys. */
abstract class View {
  constructor(
    /** The replica whose state holds this CRDT. */
    protected readonly owner: CausalReplica,
    /** Field keys from the owner's root to this CRDT (empty at the top level). */
    readonly path: readonly string[],
  ) {}

  /** Commits the mutator's delta at this handle's path; false when it had nothing to do. */
  protected change<T extends DotStore>(mutator: (store: T, alloc: DotAllocator) => CausalState | null): boolean {
    return this.owner.mutateAt<T>(this.path, mutator) !== null
  }
}

/** A grow-only counter. */
export class GCounterView extends View {
  /** Adds `n` (default 1). */
  increment(n = 1): boolean {
    if (amount(n) === 0) return false
    return this.change<GCounterStore>((store, alloc) => gcounterIncrement(store, alloc, n))
  }

  /** The count. */
  value(): number {
    return gcounterValue(this.owner.storeAt(this.path) as GCounterStore)
  }
}

/** A counter that goes up and down. */
export class PNCounterView extends View {
  /** Adds `n` (default 1). */
  increment(n = 1): boolean {
    if (amount(n) === 0) return false
    return this.change<PNCounterStore>((store, alloc) => pncounterChange(store, alloc, n, 0))
  }

  /** Subtracts `n` (default 1). */
  decrement(n = 1): boolean {
    if (amount(n) === 0) return false
    return this.change<PNCounterStore>((store, alloc) => pncounterChange(store, alloc, 0, n))
  }

  /** The count. */
  value(): number {
    return pncounterValue(this.owner.storeAt(this.path) as PNCounterStore)
  }
}

/** A grow-only set of JSON values. */
export class GSetView<T extends Json = Json> extends View {
  /** Adds `element` (false when already there). */
  add(element: T): boolean {
    return this.change<SetStore>((store, alloc) => gsetAdd(store, alloc, element))
  }

  /** Whether `element` is in the set (by canonical JSON). */
  has(element: T): boolean {
    return setHas(this.owner.storeAt(this.path) as SetStore, element)
  }

  /** The elements in canonical order. */
  values(): T[] {
    return setValues(this.owner.storeAt(this.path) as SetStore) as T[]
  }

  /** Number of elements. */
  get size(): number {
    return (this.owner.storeAt(this.path) as SetStore).entries.size
  }
}

/** An add-wins observed-remove set of JSON values. */
export class ORSetView<T extends Json = Json> extends View {
  /** Adds `element` (a new add, so it also wins over concurrent removes). */
  add(element: T): boolean {
    return this.change<SetStore>((store, alloc) => orsetAdd(store, alloc, element))
  }

  /** Removes `element` as observed here (false when absent). */
  delete(element: T): boolean {
    return this.change<SetStore>((store) => orsetRemove(store, element))
  }

  /** Whether `element` is in the set (by canonical JSON). */
  has(element: T): boolean {
    return setHas(this.owner.storeAt(this.path) as SetStore, element)
  }

  /** The elements in canonical order. */
  values(): T[] {
    return setValues(this.owner.storeAt(this.path) as SetStore) as T[]
  }

  /** Number of elements. */
  get size(): number {
    return (this.owner.storeAt(this.path) as SetStore).entries.size
  }
}

/** An enable-wins flag. */
export class EWFlagView extends View {
  /** Turns the flag on (a new enable, winning over concurrent disables). */
  enable(): boolean {
    return this.change<DotSet>((store, alloc) => flagEnable(store, alloc))
  }

  /** Turns the flag off as observed here (false when already off). */
  disable(): boolean {
    return this.change<DotSet>((store) => flagDisable(store))
  }

  /** Whether the flag is on. */
  enabled(): boolean {
    return flagEnabled(this.owner.storeAt(this.path) as DotSet)
  }
}

/** A multi-value register: keeps every concurrent write. */
export class MVRegisterView<T extends Json = Json> extends View {
  /** Writes `value`, superseding every value seen here. */
  set(value: T): boolean {
    return this.change<MVRegisterStore>((store, alloc) => mvWrite(store, alloc, [value]))
  }

  /** Removes the values seen here (false when empty). */
  clear(): boolean {
    return this.change<MVRegisterStore>((store) => registerClear(store))
  }

  /** The concurrent values, distinct, in canonical order. */
  values(): T[] {
    return mvValues(this.owner.storeAt(this.path) as MVRegisterStore) as T[]
  }
}

/** A last-writer-wins register ordered by the hybrid logical clock, ties broken by replica id. */
export class LWWRegisterView<T extends Json = Json> extends View {
  /** Writes `value` at the clock's next timestamp. */
  set(value: T): boolean {
    return this.change<LWWRegisterStore>((store, alloc) => lwwWrite(store, alloc, this.owner.clock, value))
  }

  /** Removes the writes seen here (false when empty); the value becomes null. */
  clear(): boolean {
    return this.change<LWWRegisterStore>((store) => registerClear(store))
  }

  /** The winning value, or null before the first write. */
  get(): T | null {
    return lwwValue(this.owner.storeAt(this.path) as LWWRegisterStore) as T | null
  }
}

/** An observed-remove map whose fields are nested CRDTs. */
export class ORMapView extends View {
  private field(tag: NativeType, name: string): string[] {
    checkFieldName(name)
    if (this.path.length + 1 > MAX_NESTING) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `ormap: fields nest at most ${MAX_NESTING} levels deep`)
    }
    return [...this.path, fieldKey(tag, name)]
  }

  private get store(): DotMap {
    return this.owner.storeAt(this.path) as DotMap
  }

  /** Sets `name` to a JSON value (an LWW register field). */
  set(name: string, value: Json): boolean {
    return this.register(name).set(value)
  }

  /** The value shown for `name` (see FIELD_PRECEDENCE in ormap.ts), or undefined. */
  get(name: string): Json | undefined {
    checkFieldName(name)
    const value = mapGet(this.store, name)
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
    return mapFieldTags(this.store, name).length > 0
  }

  /** The names present, sorted. */
  keys(): string[] {
    return mapKeys(this.store)
  }

  /** The types of the fields under `name` (several after concurrent puts of different types). */
  fieldTypes(name: string): NativeType[] {
    checkFieldName(name)
    return mapFieldTags(this.store, name)
  }

  /** The whole map as a plain object. */
  toJSON(): { [name: string]: Json } {
    return mapValue(this.store)
  }

  /** The LWW register field `name`. */
  register<T extends Json = Json>(name: string): LWWRegisterView<T> {
    return new LWWRegisterView<T>(this.owner, this.field('lww-register', name))
  }

  /** The multi-value register field `name`. */
  mvRegister<T extends Json = Json>(name: string): MVRegisterView<T> {
    return new MVRegisterView<T>(this.owner, this.field('mv-register', name))
  }

  /** The PN-counter field `name`. */
  counter(name: string): PNCounterView {
    return new PNCounterView(this.owner, this.field('pncounter', name))
  }

  /** The grow-only counter field `name`. */
  gcounter(name: string): GCounterView {
    return new GCounterView(this.owner, this.field('gcounter', name))
  }

  /** The add-wins set field `name`. */
  orset<T extends Json = Json>(name: string): ORSetView<T> {
    return new ORSetView<T>(this.owner, this.field('orset', name))
  }

  /** The grow-only set field `name`. */
  gset<T extends Json = Json>(name: string): GSetView<T> {
    return new GSetView<T>(this.owner, this.field('gset', name))
  }

  /** The enable-wins flag field `name`. */
  flag(name: string): EWFlagView {
    return new EWFlagView(this.owner, this.field('ewflag', name))
  }

  /** The nested map field `name`. */
  map(name: string): ORMapView {
    return new ORMapView(this.owner, this.field('ormap', name))
  }
}
