/**
 * Store specs: the shape of each native type's dot store, used by the codec
 * to read and validate untrusted bytes (what kind of store, how a dot fun's
 * values are encoded and checked, which keys a dot map accepts and what
 * store lives under each).
 */
import type { Decoder, Encoder } from '../codec.ts'
import { DecodeError } from '../errors.ts'
import { readHlc, writeHlc, type HlcTimestamp } from '../hlc.ts'
import { canonicalJson, parseCanonicalJson, type Json } from './json.ts'

/** The native delta-state types. */
export type NativeType = 'gcounter' | 'pncounter' | 'gset' | 'orset' | 'lww-register' | 'mv-register' | 'ormap' | 'ewflag'

/** Every native type tag, in type-code order (code = index + 1). */
export const NATIVE_TYPES: readonly NativeType[] = ['gcounter', 'pncounter', 'gset', 'orset', 'lww-register', 'mv-register', 'ormap', 'ewflag']

/** True for a native type tag. */
export function isNativeType(tag: string): tag is NativeType {
  return (NATIVE_TYPES as readonly string[]).includes(tag)
}

/** The one-byte code of a native type in encoded states and versions. */
export function typeCode(tag: NativeType): number {
  return NATIVE_TYPES.indexOf(tag) + 1
}

/** Reads and encodes the values of a dot fun. */
export interface ValueCodec<V> {
  write(encoder: Encoder, value: V): void
  /** Reads and validates one value (DecodeError when invalid). */
  read(decoder: Decoder): V
}

/** The shape of a store. */
export type StoreSpec =
  | { readonly kind: 'set' }
  | { readonly kind: 'fun'; readonly values: ValueCodec<unknown> }
  | { readonly kind: 'map'; child(key: string): StoreSpec }

/** A PN-counter's per-replica cumulative totals. */
export interface PnTotals {
  readonly inc: number
  readonly dec: number
}

/** An LWW register's write: its timestamp and value. */
export interface LwwWrite {
  readonly hlc: HlcTimestamp
  readonly value: Json
}

const MAX_TOTAL = Number.MAX_SAFE_INTEGER

const countCodec: ValueCodec<number> = {
  write: (e, v) => {
    e.writeVarUint(v)
  },
  read: (d) => {
    const v = d.readVarUint()
    if (v < 1) throw new DecodeError('gcounter: a total must be at least 1')
    return v
  },
}

const pnCodec: ValueCodec<PnTotals> = {
  write: (e, v) => {
    e.writeVarUint(v.inc).writeVarUint(v.dec)
  },
  read: (d) => {
    const inc = d.readVarUint()
    const dec = d.readVarUint()
    if (inc + dec < 1 || inc > MAX_TOTAL || dec > MAX_TOTAL) throw new DecodeError('pncounter: totals out of range')
    return { inc, dec }
  },
}

const jsonCodec: ValueCodec<Json> = {
  write: (e, v) => {
    e.writeString(canonicalJson(v))
  },
  read: (d) => parseCanonicalJson(d.readString()),
}

const lwwCodec: ValueCodec<LwwWrite> = {
  write: (e, v) => {
    writeHlc(e, v.hlc)
    e.writeString(canonicalJson(v.value))
  },
  read: (d) => {
    const hlc = readHlc(d)
    return { hlc, value: parseCanonicalJson(d.readString()) }
  },
}

const dotSetSpec: StoreSpec = { kind: 'set' }

/** Keys of a set's dot map are canonical JSON texts of the elements. */
const elementMapSpec: StoreSpec = {
  kind: 'map',
  child(key) {
    parseCanonicalJson(key)
    return dotSetSpec
  },
}

/** The separator between a map field's type tag and its name in a field key. */
export const FIELD_SEPARATOR = '/'

/** The key of an ORMap field: `tag/name`. */
export function fieldKey(tag: NativeType, name: string): string {
  return tag + FIELD_SEPARATOR + name
}

/** Splits a field key; undefined when it is not `nativeTag/name`. */
export function parseFieldKey(key: string): { tag: NativeType; name: string } | undefined {
  const at = key.indexOf(FIELD_SEPARATOR)
  if (at < 0) return undefined
  const tag = key.slice(0, at)
  return isNativeType(tag) ? { tag, name: key.slice(at + 1) } : undefined
}

const mapSpec: StoreSpec = {
  kind: 'map',
  child(key) {
    const field = parseFieldKey(key)
    if (!field) throw new DecodeError(`ormap: bad field key`)
    return STORE_SPECS[field.tag]
  },
}

/** The store spec of every native type. */
export const STORE_SPECS: Readonly<Record<NativeType, StoreSpec>> = {
  gcounter: { kind: 'fun', values: countCodec as ValueCodec<unknown> },
  pncounter: { kind: 'fun', values: pnCodec as ValueCodec<unknown> },
  gset: elementMapSpec,
  orset: elementMapSpec,
  'lww-register': { kind: 'fun', values: lwwCodec as ValueCodec<unknown> },
  'mv-register': { kind: 'fun', values: jsonCodec as ValueCodec<unknown> },
  ormap: mapSpec,
  ewflag: dotSetSpec,
}
