/**
 * The catalog of replicated types: the one list of type tags. Each type is
 * defined in its own file (a native CRDT in crdt/types/<tag>.ts: core,
 * store codec, view and replica class; a document in
 * crdt/documents/<name>-replica.ts); this file lists them, and everything
 * that needs the list derives it from here: the type unions
 * ({@link NativeType}, {@link ReplicaType}), the registry's factories
 * (crdt/registry.ts), the codec's type codes and the ORMap's field types
 * (the native table), the protocol's known types (sync/messages.ts; checked
 * in sync/messages/fields.ts), the store's type checks
 * (persistence/format/stored-type.ts) and the peer's
 * typed openers ({@link TypedOpeners}, installed by {@link installOpeners}).
 *
 * Adding a type: one new file and one line below (docs/adding-a-type.md).
 * A tag and a native type code, once released, are never renamed or reused:
 * they are in stored records and on the wire.
 */
import { automergeType } from './documents/automerge-replica.ts'
import type { DocumentTypeDef } from './documents/document-type.ts'
import { yjsType } from './documents/yjs-replica.ts'
import type { Replica, ReplicaFactory } from './replica.ts'
import { ewflagType } from './types/ewflag.ts'
import { gcounterType } from './types/gcounter.ts'
import { gsetType } from './types/gset.ts'
import { lwwRegisterType } from './types/lww-register.ts'
import { mvRegisterType } from './types/mv-register.ts'
import { nativeTypes, type NativeTypeDef } from './types/native-type.ts'
import { installFieldType, ormapType } from './types/ormap.ts'
import { orsetType } from './types/orset.ts'
import { pncounterType } from './types/pncounter.ts'

/** The native delta-state types, in type-code order. */
const NATIVE_CATALOG = [gcounterType, pncounterType, gsetType, orsetType, lwwRegisterType, mvRegisterType, ormapType, ewflagType] as const

/** The document types. */
const DOCUMENT_CATALOG = [yjsType, automergeType] as const

/** The native delta-state types' tags. */
export type NativeType = (typeof NATIVE_CATALOG)[number]['tag']

/** The document types' tags. */
export type DocumentType = (typeof DOCUMENT_CATALOG)[number]['tag']

/** Every replicated type, by its stable tag (persisted and sent on the wire). */
export type ReplicaType = NativeType | DocumentType

/** An entry of the catalog: a native type or a document type. */
export type CatalogEntry = NativeTypeDef | DocumentTypeDef

/** Every native type tag of this version, in type-code order. */
export const NATIVE_TYPES: readonly NativeType[] = NATIVE_CATALOG.map((def) => def.tag)

/** Every replica type tag of this version (what a peer of this version knows). */
export const KNOWN_TYPES: readonly ReplicaType[] = [...NATIVE_TYPES, ...DOCUMENT_CATALOG.map((def) => def.tag)]

/** The entries, by tag (the built-in ones and any a test added). */
const entries = new Map<string, CatalogEntry>()
/** The factories, by tag (crdt/registry.ts's `replicaFactories`). */
export const catalogFactories: Partial<Record<ReplicaType, ReplicaFactory>> = {}

function add(entry: CatalogEntry): void {
  if (entries.has(entry.tag)) throw new TypeError(`catalog: the type "${entry.tag}" is listed twice`)
  for (const other of entries.values()) {
    if (other.opener === entry.opener) throw new TypeError(`catalog: "${entry.tag}" and "${other.tag}" share the opener "${entry.opener}"`)
  }
  if (entry.kind === 'native') {
    nativeTypes.add(entry)
    installFieldType(entry)
  }
  entries.set(entry.tag, entry)
  catalogFactories[entry.tag as ReplicaType] = entry.factory
  for (const target of openerTargets) installOpener(target, entry)
}

/**
 * The typed openers of a peer (`peer.counter(name)`, `peer.set(name)`, ...),
 * `O` being its per-name options: each type's file declares its own here
 * (`declare module '../catalog.ts' { interface TypedOpeners<O> { ... } }`),
 * and {@link installOpeners} installs one per catalog entry, opening the
 * entry's tag.
 */
// biome-ignore lint/suspicious/noEmptyInterface: each type's file merges its opener in (a type alias cannot be merged)
// biome-ignore lint/correctness/noUnusedVariables: O is used by the openers merged in
export interface TypedOpeners<O> {}

/** What an installed opener calls: the holder's `open(name, type, options)`. */
export interface OpenerTarget {
  open(name: string, type: ReplicaType, options?: unknown): Promise<Replica>
}

const openerTargets: object[] = []

function installOpener(prototype: object, entry: CatalogEntry): void {
  const type = entry.tag as ReplicaType
  if (Object.hasOwn(prototype, entry.opener)) throw new TypeError(`catalog: the opener "${entry.opener}" of "${entry.tag}" is taken`)
  Object.defineProperty(prototype, entry.opener, {
    configurable: true,
    writable: true,
    value(this: OpenerTarget, name: string, options?: unknown) {
      return this.open(name, type, options)
    },
  })
}

/**
 * Installs on `prototype` (a peer class's) one typed opener per catalog
 * entry, and those of types added later; declare them on the class with
 * `interface X extends TypedOpeners<Options> {}`.
 */
export function installOpeners(prototype: OpenerTarget): void {
  openerTargets.push(prototype)
  for (const entry of entries.values()) installOpener(prototype, entry)
}

/** The catalog entry of `tag`, or undefined. */
export function catalogEntry(tag: string): CatalogEntry | undefined {
  return entries.get(tag)
}

/** Whether `tag` is a type this catalog holds (the built-in ones and any a test added). */
export function isKnownType(tag: string): tag is ReplicaType {
  return entries.has(tag)
}

/** True for a native type tag. */
export function isNativeType(tag: string): tag is NativeType {
  return entries.get(tag)?.kind === 'native'
}

/** The one-byte code of a native type in encoded states and versions. */
export function typeCode(tag: NativeType): number {
  return nativeTypes.of(tag).code
}

/**
 * @internal For tests only: adds a type to the running catalog (the recipe
 * of docs/adding-a-type.md, without editing the list above). A production
 * type goes in the list: a peer that does not know a tag refuses what
 * carries it.
 */
export function extendCatalog(entry: CatalogEntry): void {
  add(entry)
}

for (const entry of [...NATIVE_CATALOG, ...DOCUMENT_CATALOG]) add(entry)
