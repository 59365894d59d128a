/**
 * LWWRegister (last-writer-wins register) as a causal CRDT (see
 * register-core.ts): every write carries an HLC timestamp; the value is the
 * write with the greatest `(hlc, agent id)` (then dot counter, then
 * canonical JSON, for a total order even on forged input), or `null`
 * before the first write. Concurrent losers stay in the store until the
 * next write supersedes them (the join does not prune them, so it stays a
 * plain dot-fun join). Its core, store codec, view and replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun, type DotEntry } from '../causal/dot-store.ts'
import { compareStamped, readHlc, writeHlc, type HlcTimestamp, type HybridClock } from '../hlc.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { defineNativeType } from './define-native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, copyJson, parseCanonicalJson, type Json } from './json.ts'
import type { ValueCodec, NativeTypeDef } from './native-type.ts'
import { registerClear } from './register-core.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** An LWW register's write: its timestamp and value. */
export interface LwwWrite {
  readonly hlc: HlcTimestamp
  readonly value: Json
}

/** The store of an LWWRegister. */
export type LWWRegisterStore = DotFun<LwwWrite>

/** The winning write of an LWW register, or undefined when empty. */
export function lwwWinner(store: LWWRegisterStore): DotEntry<LwwWrite> | undefined {
  let best: DotEntry<LwwWrite> | undefined
  for (const e of store.entries) {
    if (!best) {
      best = e
      continue
    }
    let order = compareStamped(e.value.hlc, e.dot.replica, best.value.hlc, best.dot.replica)
    if (order === 0) order = e.dot.counter - best.dot.counter
    if (order === 0) order = canonicalJson(e.value.value) < canonicalJson(best.value.value) ? -1 : 1
    if (order > 0) best = e
  }
  return best
}

/** The LWW register's value (a copy), or null when never written. */
export function lwwValue(store: LWWRegisterStore): Json {
  const winner = lwwWinner(store)
  return winner ? copyJson(winner.value.value) : null
}

/** Delta writing `value` at the clock's next timestamp, superseding what was observed. */
export function lwwWrite(store: LWWRegisterStore, alloc: DotAllocator, clock: HybridClock, value: unknown): CausalState<LWWRegisterStore> {
  const text = canonicalJson(value)
  for (const e of store.entries) clock.observe(e.value.hlc)
  const d = alloc.next()
  const write: LwwWrite = { hlc: clock.now(), value: JSON.parse(text) as Json }
  return { store: new DotFun([{ dot: d, value: write }]), ctx: CausalContext.of([d, ...store.entries.map((e) => e.dot)]) }
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

/** LWWRegister: the catalog's entry. */
export const lwwRegisterType: NativeTypeDef<LWWRegisterStore, 'lww-register'> = defineNativeType({
  tag: 'lww-register',
  code: 5,
  spec: { kind: 'fun', values: lwwCodec as ValueCodec<unknown> },
  precedence: 1,
  opener: 'register',
  field: { accessor: 'register', view: (owner, path) => new LWWRegisterView(owner, path) },
  create: (options) => new LWWRegisterReplica(options),
  empty: () => new DotFun<LwwWrite>(),
  value: lwwValue,
  restore(current, past, alloc, clock) {
    const want = lwwValue(past)
    const sameShape = (past.entries.length === 0) === (current.entries.length === 0)
    if (sameShape && canonicalJson(want) === canonicalJson(lwwValue(current))) return null
    return past.entries.length === 0 ? registerClear(current) : lwwWrite(current, alloc, clock, want)
  },
  observe(store, clock) {
    for (const e of store.entries) clock.observe(e.value.hlc)
  },
})

/** A last-writer-wins register ordered by the hybrid logical clock, ties broken by agent id. */
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
    return lwwValue(this.store<LWWRegisterStore>()) as T | null
  }
}

/** Last-writer-wins register (HLC order, ties by agent id); null before the first write. */
export class LWWRegisterReplica<T extends Json = Json> extends CausalReplica<LWWRegisterStore> {
  private readonly view = new LWWRegisterView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(lwwRegisterType, options)
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

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** A last-writer-wins register (hybrid logical clock, ties by agent id). */
    register<T extends Json = Json>(name: string, options?: O): Promise<LWWRegisterReplica<T>>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The LWW register field `name`. */
    register<T extends Json = Json>(name: string): LWWRegisterView<T>
  }
}
