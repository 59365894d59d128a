/**
 * The binary codec of native states, deltas and versions.
 *
 * State / delta (one format: a delta is a state, usually a small one):
 * ```
 * u8      format version (1)
 * u8      type code (each type's `code` in its file: 1 gcounter, 2 pncounter,
 *         3 gset, 4 orset, 5 lww-register, 6 mv-register, 7 ormap, 8 ewflag)
 * context causal context (see writeContext)
 * store   dot store:
 *   set:  varuint n, n dots
 *   fun:  varuint n, n x (dot, value)
 *   map:  varuint n, n x (string key, nested store)   keys strictly increasing
 *   dot:  varuint index of the replica in the context's sorted replica list,
 *         varuint counter;  dots strictly increasing
 * u32     CRC-32 of every byte before it (big-endian)
 * ```
 * Version: `u8 version (1), u8 type code, context seen, context dead, u32 CRC-32` where
 * "dead" are the seen dots that are no longer in the store (so a sender can
 * tell which removals the holder of the version still lacks).
 *
 * Decoding is total: any malformed input throws DecodeError, including a
 * store dot outside the context, a non-canonical order, an empty nested
 * store, a value that fails its type's checks, nesting deeper than
 * {@link MAX_NESTING}.
 */
import { decodeGuarded, Encoder, type Decoder } from '../codec.ts'
import { DecodeError, withArticle } from '../errors.ts'
import { type CausalContext, MAX_COUNTER, readContext, writeContext } from '../causal/causal-context.ts'
import type { Dot } from '../causal/dot.ts'
import { DotFun, DotMap, DotSet, type DotEntry, type DotStore } from '../causal/dot-store.ts'
import { appendCrc32, stripCrc32 } from './crc32.ts'
import type { NativeType } from '../catalog.ts'
import { nativeTypes, type StoreSpec } from './native-type.ts'

/** Format version of encoded native states, deltas and versions. */
export const STATE_FORMAT_VERSION = 1

/** Deepest nesting of maps accepted. */
export const MAX_NESTING = 32

/** A causal state (or delta): a dot store and the context it was seen in. */
export interface CausalState<S extends DotStore = DotStore> {
  readonly store: S
  readonly ctx: CausalContext
}

/** A decoded version: what a replica has seen, and which of those dots it no longer holds. */
export interface NativeVersion {
  readonly type: NativeType
  readonly seen: CausalContext
  readonly dead: CausalContext
}

function writeDot(encoder: Encoder, d: Dot, replicaIndex: Map<string, number>): void {
  encoder.writeVarUint(replicaIndex.get(d.replica)!).writeVarUint(d.counter)
}

function writeStore(encoder: Encoder, store: DotStore, spec: StoreSpec, replicaIndex: Map<string, number>): void {
  switch (store.kind) {
    case 'set':
      encoder.writeVarUint(store.dots.length)
      for (const d of store.dots) writeDot(encoder, d, replicaIndex)
      return
    case 'fun': {
      if (spec.kind !== 'fun') throw new TypeError('store does not match its spec')
      encoder.writeVarUint(store.entries.length)
      for (const entry of store.entries) {
        writeDot(encoder, entry.dot, replicaIndex)
        spec.values.write(encoder, entry.value)
      }
      return
    }
    case 'map': {
      if (spec.kind !== 'map') throw new TypeError('store does not match its spec')
      const keys = [...store.entries.keys()].sort()
      encoder.writeVarUint(keys.length)
      for (const key of keys) {
        encoder.writeString(key)
        writeStore(encoder, store.entries.get(key)!, spec.child(key), replicaIndex)
      }
    }
  }
}

/** Encodes a state or delta of `type`. */
export function encodeState(type: NativeType, state: CausalState): Uint8Array {
  const encoder = new Encoder(256)
  const def = nativeTypes.of(type)
  encoder.writeUint8(STATE_FORMAT_VERSION).writeUint8(def.code)
  writeContext(encoder, state.ctx)
  const replicaIndex = new Map(state.ctx.replicas().map((replica, i) => [replica, i]))
  writeStore(encoder, state.store, def.spec, replicaIndex)
  return appendCrc32(encoder.finish())
}

class StoreReader {
  constructor(
    private readonly decoder: Decoder,
    private readonly replicas: string[],
    private readonly ctx: CausalContext,
  ) {}

  /** Reads one dot; it must be in the context and after `previous`. */
  dot(previous: Dot | undefined, previousIndex: number): { dot: Dot; index: number } {
    const index = this.decoder.readVarUint()
    if (index >= this.replicas.length) throw new DecodeError('store: dot of a replica outside the context')
    const counter = this.decoder.readVarUint()
    if (counter < 1 || counter > MAX_COUNTER) throw new DecodeError('store: dot counter out of range')
    if (previous && (index < previousIndex || (index === previousIndex && counter <= previous.counter))) {
      throw new DecodeError('store: dots not in canonical order')
    }
    const d = { replica: this.replicas[index], counter }
    if (!this.ctx.has(d)) throw new DecodeError('store: a dot outside the context')
    return { dot: d, index }
  }

  store(spec: StoreSpec, depth: number): DotStore {
    if (depth > MAX_NESTING) throw new DecodeError(`store: nested deeper than ${MAX_NESTING}`)
    switch (spec.kind) {
      case 'set': {
        const count = this.decoder.readCount(2)
        const dots: Dot[] = []
        let previous: Dot | undefined
        let previousIndex = -1
        for (let i = 0; i < count; i++) {
          const { dot, index } = this.dot(previous, previousIndex)
          dots.push(dot)
          previous = dot
          previousIndex = index
        }
        return new DotSet(dots)
      }
      case 'fun': {
        const count = this.decoder.readCount(3)
        const entries: Array<DotEntry<unknown>> = []
        let previous: Dot | undefined
        let previousIndex = -1
        for (let i = 0; i < count; i++) {
          const { dot, index } = this.dot(previous, previousIndex)
          entries.push({ dot, value: spec.values.read(this.decoder) })
          previous = dot
          previousIndex = index
        }
        return new DotFun(entries)
      }
      case 'map': {
        const count = this.decoder.readCount(3)
        const map = new DotMap()
        let previousKey: string | undefined
        for (let i = 0; i < count; i++) {
          const key = this.decoder.readString()
          if (previousKey !== undefined && !(previousKey < key)) throw new DecodeError('store: map keys not in canonical order')
          previousKey = key
          const child = this.store(spec.child(key), depth + 1)
          const empty = child.kind === 'map' ? child.entries.size === 0 : child.kind === 'set' ? child.dots.length === 0 : child.entries.length === 0
          if (empty) throw new DecodeError('store: empty nested store')
          map.setChild(key, child)
        }
        return map
      }
    }
  }
}

/** The body of `bytes` after checking its trailing CRC-32 (DecodeError when absent or wrong). */
function checked(format: string, bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError(`${format}: expected a Uint8Array`)
  const body = stripCrc32(bytes)
  if (!body) throw new DecodeError(`${format}: checksum mismatch (corrupt or truncated)`)
  return body
}

/** Reads a type code byte. */
function readType(decoder: Decoder): NativeType {
  const code = decoder.readUint8()
  const def = nativeTypes.withCode(code)
  if (!def) throw new DecodeError(`unknown native type code ${code}`)
  return def.tag as NativeType
}

/**
 * Decodes a state or delta. With `expected`, a state of another type is a
 * DecodeError. Validates every invariant the codec can see (see the module
 * comment); never throws anything but DecodeError.
 */
export function decodeState(bytes: Uint8Array, expected?: NativeType): { type: NativeType; state: CausalState } {
  return decodeGuarded('native state', checked('native state', bytes), (decoder) => {
    decoder.readVersion(STATE_FORMAT_VERSION, 'native state')
    const type = readType(decoder)
    if (expected && type !== expected) throw new DecodeError(`expected ${withArticle(expected)} state, got ${withArticle(type)} state`)
    const ctx = readContext(decoder)
    const store = new StoreReader(decoder, ctx.replicas(), ctx).store(nativeTypes.of(type).spec, 0)
    return { type, state: { store, ctx } }
  })
}

/** Encodes a version. */
export function encodeVersion(type: NativeType, seen: CausalContext, dead: CausalContext): Uint8Array {
  const encoder = new Encoder(64)
  encoder.writeUint8(STATE_FORMAT_VERSION).writeUint8(nativeTypes.of(type).code)
  writeContext(encoder, seen)
  writeContext(encoder, dead)
  return appendCrc32(encoder.finish())
}

/** Decodes a version (DecodeError when malformed, of another type, or when "dead" is not within "seen"). */
export function decodeVersion(bytes: Uint8Array, expected?: NativeType): NativeVersion {
  return decodeGuarded('native version', checked('native version', bytes), (decoder) => {
    decoder.readVersion(STATE_FORMAT_VERSION, 'native version')
    const type = readType(decoder)
    if (expected && type !== expected) throw new DecodeError(`expected ${withArticle(expected)} version, got ${withArticle(type)} version`)
    const seen = readContext(decoder)
    const dead = readContext(decoder)
    if (!dead.isSubsetOf(seen)) throw new DecodeError('version: dead dots outside the seen context')
    return { type, seen, dead }
  })
}
