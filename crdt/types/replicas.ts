/**
 * The eight native replicas: each is a {@link CausalReplica} (the Replica
 * interface: version, deltaSince, applyDelta, snapshot, restore, change
 * events) plus its type's mutators. Mutators are synchronous: they compute a
 * delta without touching the state, join it, emit `change` with
 * `local: true` (its `delta` is the change's bytes), and return true, or
 * false when there was nothing to do. `value()` is the plain JSON value.
 */
import type { DotMap, DotSet } from '../causal/dot-store.ts'
import type { ReplicaFactory, ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import type { GCounterStore, PNCounterStore } from './counters.ts'
import type { Json } from './json.ts'
import { mergeNativeDeltas } from './merge-deltas.ts'
import type { LWWRegisterStore, MVRegisterStore } from './registers.ts'
import type { SetStore } from './sets.ts'
import type { NativeType } from './store-spec.ts'
import { EWFlagView, GCounterView, GSetView, LWWRegisterView, MVRegisterView, ORMapView, ORSetView, PNCounterView } from './views.ts'

/** Grow-only counter. */
export class GCounterReplica extends CausalReplica<GCounterStore> {
  private readonly view = new GCounterView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('gcounter', options)
  }
  /** Adds `n` (default 1; 0 does nothing). */
  increment(n = 1): boolean {
    return this.view.increment(n)
  }
  /** The count. */
  override value(): number {
    return this.view.value()
  }
}

/** Counter that goes up and down. */
export class PNCounterReplica extends CausalReplica<PNCounterStore> {
  private readonly view = new PNCounterView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('pncounter', options)
  }
  /** Adds `n` (default 1; 0 does nothing). */
  increment(n = 1): boolean {
    return this.view.increment(n)
  }
  /** Subtracts `n` (default 1; 0 does nothing). */
  decrement(n = 1): boolean {
    return this.view.decrement(n)
  }
  /** The count. */
  override value(): number {
    return this.view.value()
  }
}

/** Grow-only set of JSON values (identity: canonical JSON). */
export class GSetReplica<T extends Json = Json> extends CausalReplica<SetStore> {
  private readonly view = new GSetView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('gset', options)
  }
  /** Adds `element` (false when already there). */
  add(element: T): boolean {
    return this.view.add(element)
  }
  /** Whether `element` is in the set. */
  has(element: T): boolean {
    return this.view.has(element)
  }
  /** The elements in canonical order. */
  values(): T[] {
    return this.view.values()
  }
  /** Number of elements. */
  get size(): number {
    return this.view.size
  }
  /** The elements in canonical order. */
  override value(): T[] {
    return this.view.values()
  }
}

/** Add-wins observed-remove set of JSON values (identity: canonical JSON). */
export class ORSetReplica<T extends Json = Json> extends CausalReplica<SetStore> {
  private readonly view = new ORSetView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('orset', options)
  }
  /** Adds `element`. */
  add(element: T): boolean {
    return this.view.add(element)
  }
  /** Removes `element` as observed here (false when absent). */
  delete(element: T): boolean {
    return this.view.delete(element)
  }
  /** Whether `element` is in the set. */
  has(element: T): boolean {
    return this.view.has(element)
  }
  /** The elements in canonical order. */
  values(): T[] {
    return this.view.values()
  }
  /** Number of elements. */
  get size(): number {
    return this.view.size
  }
  /** The elements in canonical order. */
  override value(): T[] {
    return this.view.values()
  }
}

/** Last-writer-wins register (HLC order, ties by replica id); null before the first write. */
export class LWWRegisterReplica<T extends Json = Json> extends CausalReplica<LWWRegisterStore> {
  private readonly view = new LWWRegisterView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('lww-register', options)
  }
  /** Writes `value`. */
  set(value: T): boolean {
    return this.view.set(value)
  }
  /** Empties the register (value null) as observed here. */
  clear(): boolean {
    return this.view.clear()
  }
  /** The winning value, or null. */
  override value(): T | null {
    return this.view.get()
  }
}

/** Multi-value register: every concurrent value, distinct, in canonical order. */
export class MVRegisterReplica<T extends Json = Json> extends CausalReplica<MVRegisterStore> {
  private readonly view = new MVRegisterView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('mv-register', options)
  }
  /** Writes `value`, superseding every value seen here. */
  set(value: T): boolean {
    return this.view.set(value)
  }
  /** Removes the values seen here. */
  clear(): boolean {
    return this.view.clear()
  }
  /** The concurrent values. */
  values(): T[] {
    return this.view.values()
  }
  /** The concurrent values. */
  override value(): T[] {
    return this.view.values()
  }
}

/** Enable-wins flag. */
export class EWFlagReplica extends CausalReplica<DotSet> {
  private readonly view = new EWFlagView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('ewflag', options)
  }
  /** Turns the flag on. */
  enable(): boolean {
    return this.view.enable()
  }
  /** Turns the flag off as observed here (false when already off). */
  disable(): boolean {
    return this.view.disable()
  }
  /** Whether the flag is on. */
  enabled(): boolean {
    return this.view.enabled()
  }
  /** Whether the flag is on. */
  override value(): boolean {
    return this.view.enabled()
  }
}

/** Observed-remove map of nested CRDTs; see ormap.ts for the semantics and {@link ORMapView} for the API. */
export class ORMapReplica extends CausalReplica<DotMap> {
  /** The map's API (also reachable through the methods below). */
  readonly root = new ORMapView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super('ormap', options)
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
  /** The LWW register field `name`. */
  register<T extends Json = Json>(name: string): LWWRegisterView<T> {
    return this.root.register<T>(name)
  }
  /** The multi-value register field `name`. */
  mvRegister<T extends Json = Json>(name: string): MVRegisterView<T> {
    return this.root.mvRegister<T>(name)
  }
  /** The PN-counter field `name`. */
  counter(name: string): PNCounterView {
    return this.root.counter(name)
  }
  /** The grow-only counter field `name`. */
  gcounter(name: string): GCounterView {
    return this.root.gcounter(name)
  }
  /** The add-wins set field `name`. */
  orset<T extends Json = Json>(name: string): ORSetView<T> {
    return this.root.orset<T>(name)
  }
  /** The grow-only set field `name`. */
  gset<T extends Json = Json>(name: string): GSetView<T> {
    return this.root.gset<T>(name)
  }
  /** The enable-wins flag field `name`. */
  flag(name: string): EWFlagView {
    return this.root.flag(name)
  }
  /** The nested map field `name`. */
  map(name: string): ORMapView {
    return this.root.map(name)
  }
  /** The whole map as a plain object. */
  override value(): { [name: string]: Json } {
    return this.root.toJSON()
  }
}

function factory<R extends CausalReplica>(type: NativeType, make: (options: ReplicaOptions) => R): ReplicaFactory<R> {
  return { type, create: make, mergeDeltas: (deltas) => mergeNativeDeltas(type, deltas) }
}

/** Factories of the eight native types, by tag. */
export const nativeReplicaFactories = {
  gcounter: factory('gcounter', (o) => new GCounterReplica(o)),
  pncounter: factory('pncounter', (o) => new PNCounterReplica(o)),
  gset: factory('gset', (o) => new GSetReplica(o)),
  orset: factory('orset', (o) => new ORSetReplica(o)),
  'lww-register': factory('lww-register', (o) => new LWWRegisterReplica(o)),
  'mv-register': factory('mv-register', (o) => new MVRegisterReplica(o)),
  ormap: factory('ormap', (o) => new ORMapReplica(o)),
  ewflag: factory('ewflag', (o) => new EWFlagReplica(o)),
} as const satisfies Record<NativeType, ReplicaFactory>
