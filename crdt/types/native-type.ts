/**
 * What a native delta-state type is made of (one {@link NativeTypeDef} per
 * type, defined in the type's own file with {@link defineNativeType}), the
 * shape of its dot store for the codec ({@link StoreSpec}), and the table of
 * the native types by tag and by code that crdt/catalog.ts fills: the codec
 * reads a type code through it and an ORMap finds its field types in it.
 * This module imports no type, so every type's file can import it; a type's
 * file makes its definition with `defineNativeType` (define-native-type.ts).
 */
import { DotMap, type DotStore } from '../causal/dot-store.ts'
import type { Decoder, Encoder } from '../codec.ts'
import { ConcordError, ErrorCodes } from '../errors.ts'
import type { HybridClock } from '../hlc.ts'
import type { Replica, ReplicaFactory, ReplicaOptions } from '../replica.ts'
import type { CausalReplica } from './causal-replica.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { Json } from './json.ts'
import type { CausalState } from './state-codec.ts'
import type { View } from './view.ts'

/** Reads and encodes the values of a dot fun. */
export interface ValueCodec<V> {
  write(encoder: Encoder, value: V): void
  /** Reads and validates one value (DecodeError when invalid). */
  read(decoder: Decoder): V
}

/** The shape of a store: what the codec reads and checks. */
export type StoreSpec =
  | { readonly kind: 'set' }
  | { readonly kind: 'fun'; readonly values: ValueCodec<unknown> }
  | { readonly kind: 'map'; child(key: string): StoreSpec }

/** Makes the handle on a native CRDT at a path of map fields inside a replica (its view; see view.ts). */
export type FieldViewFactory = (owner: CausalReplica, path: readonly string[]) => View

/** Per-type behaviour of a native CRDT, as its file defines it. */
export interface NativeTypeSpec<S extends DotStore = DotStore, Tag extends string = string> {
  /** The stable tag: persisted, sent on the wire, and the ORMap field key's prefix. Never renamed. */
  readonly tag: Tag
  /** The one-byte code of the type in encoded states and versions (1..255). Never reused. */
  readonly code: number
  /** The shape of the store, for the codec. */
  readonly spec: StoreSpec
  /**
   * Where the type's field shows in an ORMap's `value()` when one name holds
   * fields of several types: the lowest present shows (the others stay
   * reachable through the typed accessors).
   */
  readonly precedence: number
  /** The name of the peer's typed opener (`peer.counter(name)`), declared in the type's file on `TypedOpeners`. */
  readonly opener: string
  /** The ORMap's typed accessor of a field of this type (`map.counter(name)`), declared on `ORMapFields`, and the view it returns. */
  readonly field?: { readonly accessor: string; readonly view: FieldViewFactory } | undefined
  /** True for a type whose store is a map of typed fields, `tag/name` (the ORMap): views nest under it. */
  readonly holdsFields?: boolean | undefined
  /** Creates a replica of the type (its class). */
  create(options: ReplicaOptions): Replica
  /** The bottom store. */
  empty(): S
  /** The value as plain JSON. */
  value(store: S): Json
  /**
   * A delta that brings `current` to the value of `past`, or null when the
   * values are equal. Throws ConcordError `CONCORD_INVALID_ARGUMENT` when the
   * type cannot go back (a grow-only type asked to shrink).
   */
  restore(current: S, past: S, alloc: DotAllocator, clock: HybridClock): CausalState<S> | null
  /** Advances the clock past every timestamp in the store (LWW registers, maps holding them). */
  observe?(store: S, clock: HybridClock): void
  /** Extra checks of a top-level delta (DecodeError when it breaks the type's rules). */
  validateDelta?(delta: CausalState<S>): void
}

/** A native type as the catalog holds it: its spec and its replica factory (create, merge of deltas). */
export interface NativeTypeDef<S extends DotStore = DotStore, Tag extends string = string> extends NativeTypeSpec<S, Tag> {
  readonly kind: 'native'
  readonly factory: ReplicaFactory
}

/**
 * The native types by tag and by code. crdt/catalog.ts installs its list
 * when it loads (every way into the crdt layer loads it: the registry, the
 * package's entry points); a test can add a type through the catalog's
 * `extendCatalog`.
 */
class NativeTypeTable {
  private readonly byTag = new Map<string, NativeTypeDef>()
  private readonly byCode = new Map<number, NativeTypeDef>()

  /** Adds a type; throws when its tag or code is taken. */
  add(def: NativeTypeDef): void {
    if (this.byTag.has(def.tag)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `native type "${def.tag}" is defined twice`)
    if (this.byCode.has(def.code))
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `native type code ${def.code} is taken by "${this.byCode.get(def.code)?.tag}"`)
    this.byTag.set(def.tag, def)
    this.byCode.set(def.code, def)
    this.precedence = undefined
  }

  /** The type of `tag`, or undefined. */
  get(tag: string): NativeTypeDef | undefined {
    return this.byTag.get(tag)
  }

  /** The type of `tag`; throws (a bug, not bad input) when there is none. */
  of(tag: string): NativeTypeDef {
    const def = this.byTag.get(tag)
    if (!def) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `unknown native type "${tag}" (is crdt/catalog.ts loaded?)`)
    return def
  }

  /** The type whose code is `code`, or undefined. */
  withCode(code: number): NativeTypeDef | undefined {
    return this.byCode.get(code)
  }

  /** Every type, by ORMap field precedence (see {@link NativeTypeSpec.precedence}). */
  byPrecedence(): readonly NativeTypeDef[] {
    this.precedence ??= [...this.byTag.values()].sort((a, b) => a.precedence - b.precedence)
    return this.precedence
  }
  private precedence: NativeTypeDef[] | undefined
}

/** The table of native types (filled by crdt/catalog.ts). */
export const nativeTypes = new NativeTypeTable()

/** The separator between a map field's type tag and its name in a field key. */
export const FIELD_SEPARATOR = '/'

/** The key of an ORMap field: `tag/name`. */
export function fieldKey(tag: string, name: string): string {
  return tag + FIELD_SEPARATOR + name
}

/** Splits a field key; undefined when it is not `nativeTag/name`. */
export function parseFieldKey(key: string): { tag: string; name: string } | undefined {
  const at = key.indexOf(FIELD_SEPARATOR)
  if (at < 0) return undefined
  const tag = key.slice(0, at)
  return nativeTypes.get(tag) ? { tag, name: key.slice(at + 1) } : undefined
}

/** Wraps a child's delta as a delta of the map holding it under `key`. */
export function wrapField(key: string, child: CausalState): CausalState<DotMap> {
  const store = new DotMap()
  store.setChild(key, child.store)
  return { store, ctx: child.ctx }
}
