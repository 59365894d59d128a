/**
 * PNCounter (a counter that goes up and down) as a causal CRDT: a dot fun
 * of each replica's cumulative `{inc, dec}` totals (see counter-core.ts).
 * Its core, store codec, view and replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun } from '../causal/dot-store.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { checkAmount, checkTotal, newestOf, newestPerReplica, viewAmount } from './counter-core.ts'
import { defineNativeType } from './define-native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { ValueCodec, NativeTypeDef } from './native-type.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** A PN-counter's per-replica cumulative totals. */
export interface PnTotals {
  readonly inc: number
  readonly dec: number
}

/** The store of a PNCounter. */
export type PNCounterStore = DotFun<PnTotals>

/** The PNCounter's value: increments minus decrements. */
export function pncounterValue(store: PNCounterStore): number {
  let sum = 0
  for (const entry of newestPerReplica(store)) sum += entry.value.inc - entry.value.dec
  return sum
}

/** Delta adding `inc` to the increments and `dec` to the decrements of `alloc.replica`. */
export function pncounterChange(store: PNCounterStore, alloc: DotAllocator, inc: number, dec: number): CausalState<PNCounterStore> {
  if (inc > 0) checkAmount(inc)
  if (dec > 0) checkAmount(dec)
  if (!(inc > 0 || dec > 0)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'counter: nothing to change')
  const own = store.entries.filter((e) => e.dot.replica === alloc.replica)
  const newest = newestOf(store, alloc.replica)?.value
  const totals = { inc: inc + (newest?.inc ?? 0), dec: dec + (newest?.dec ?? 0) }
  checkTotal(totals.inc)
  checkTotal(totals.dec)
  const d = alloc.next()
  return { store: new DotFun([{ dot: d, value: totals }]), ctx: CausalContext.of([d, ...own.map((e) => e.dot)]) }
}

const MAX_TOTAL = Number.MAX_SAFE_INTEGER

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

/** PNCounter: the catalog's entry. */
export const pncounterType: NativeTypeDef<PNCounterStore, 'pncounter'> = defineNativeType({
  tag: 'pncounter',
  code: 2,
  spec: { kind: 'fun', values: pnCodec as ValueCodec<unknown> },
  precedence: 3,
  opener: 'counter',
  field: { accessor: 'counter', view: (owner, path) => new PNCounterView(owner, path) },
  create: (options) => new PNCounterReplica(options),
  empty: () => new DotFun<PnTotals>(),
  value: pncounterValue,
  restore(current, past, alloc) {
    const diff = pncounterValue(past) - pncounterValue(current)
    // A field at 0 inside a map must still exist: +1 -1 in one dot.
    if (diff === 0) return current.entries.length === 0 && past.entries.length > 0 ? pncounterChange(current, alloc, 1, 1) : null
    return diff > 0 ? pncounterChange(current, alloc, diff, 0) : pncounterChange(current, alloc, 0, -diff)
  },
})

/** A counter that goes up and down. */
export class PNCounterView extends View {
  /** Adds `n` (default 1). */
  increment(n = 1): boolean {
    if (viewAmount(n) === 0) return false
    return this.change<PNCounterStore>((store, alloc) => pncounterChange(store, alloc, n, 0))
  }

  /** Subtracts `n` (default 1). */
  decrement(n = 1): boolean {
    if (viewAmount(n) === 0) return false
    return this.change<PNCounterStore>((store, alloc) => pncounterChange(store, alloc, 0, n))
  }

  /** The count. */
  value(): number {
    return pncounterValue(this.store<PNCounterStore>())
  }
}

/** Counter that goes up and down. */
export class PNCounterReplica extends CausalReplica<PNCounterStore> {
  private readonly view = new PNCounterView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(pncounterType, options)
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

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** A PN-counter (increment, decrement, value). */
    counter(name: string, options?: O): Promise<PNCounterReplica>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The PN-counter field `name`. */
    counter(name: string): PNCounterView
  }
}
