/**
 * Random operations on the native types, for the law suite and the chaos
 * tests: small pools of elements and names, so adds meet removes and map
 * fields of different types collide on one name.
 */
import fc from 'fast-check'
import { HybridClock } from '../../crdt/hlc.ts'
import type { Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { Json } from '../../crdt/types/json.ts'
import type { NativeType } from '../../crdt/catalog.ts'
import type {
  EWFlagReplica,
  GCounterReplica,
  GSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  ORMapReplica,
  ORSetReplica,
  PNCounterReplica,
} from '../../crdt/types/index.ts'
import type { ORMapView } from '../../crdt/types/index.ts'
import type { RandomOp } from '../../testing/index.ts'

/** A native replica with a deterministic clock (physical time frozen, so order comes from the logical part and agent ids). */
export function createNative(type: NativeType, id: string, snapshot?: Uint8Array): Replica {
  return createReplica(type, { agentId: agentId(id), clock: new HybridClock(() => 1_000), snapshot })
}

/** Elements of sets and values of registers. */
export const element: fc.Arbitrary<Json> = fc.constantFrom<Json>('a', 'b', 'c', 1, 2.5, null, true, { x: 1, y: [1, 'z'] }, [1, 2], '')

const amount = fc.integer({ min: 1, max: 5 })
const name = fc.constantFrom('p', 'q', 'r')

function named<T>(arb: fc.Arbitrary<T>, label: (v: T) => string, run: (v: T) => RandomOp): fc.Arbitrary<RandomOp> {
  return arb.map((v) => {
    const op = run(v)
    op.toString = () => label(v)
    return op
  })
}

/** Random mutations of a map (recursing into nested maps up to `depth`). */
function mapOp(depth: number): fc.Arbitrary<(m: ORMapView) => void> {
  const leaf: Array<fc.Arbitrary<(m: ORMapView) => void>> = [
    fc.tuple(name, element).map(([n, v]) => (m: ORMapView) => {
      m.set(n, v)
    }),
    name.map((n) => (m: ORMapView) => {
      m.delete(n)
    }),
    fc.tuple(name, amount, fc.boolean()).map(([n, k, up]) => (m: ORMapView) => {
      if (up) m.counter(n).increment(k)
      else m.counter(n).decrement(k)
    }),
    fc.tuple(name, amount).map(([n, k]) => (m: ORMapView) => {
      m.gcounter(n).increment(k)
    }),
    fc.tuple(name, element, fc.boolean()).map(([n, v, add]) => (m: ORMapView) => {
      if (add) m.orset(n).add(v)
      else m.orset(n).delete(v)
    }),
    fc.tuple(name, element).map(([n, v]) => (m: ORMapView) => {
      m.gset(n).add(v)
    }),
    fc.tuple(name, fc.boolean()).map(([n, on]) => (m: ORMapView) => {
      if (on) m.flag(n).enable()
      else m.flag(n).disable()
    }),
    fc.tuple(name, element, fc.boolean()).map(([n, v, clear]) => (m: ORMapView) => {
      if (clear) m.mvRegister(n).clear()
      else m.mvRegister(n).set(v)
    }),
    fc.tuple(name, fc.boolean()).map(([n, clear]) => (m: ORMapView) => {
      if (clear) m.register(n).clear()
    }),
  ]
  if (depth > 0)
    leaf.push(
      fc.tuple(name, mapOp(depth - 1)).map(
        ([n, inner]) =>
          (m: ORMapView) =>
            inner(m.map(n)),
      ),
    )
  return fc.oneof(...leaf)
}

/** A random local mutation of a replica of `type`. */
export function nativeOp(type: NativeType): fc.Arbitrary<RandomOp> {
  switch (type) {
    case 'gcounter':
      return named(
        amount,
        (n) => `increment(${n})`,
        (n) => (r) => {
          ;(r as GCounterReplica).increment(n)
        },
      )
    case 'pncounter':
      return named(
        fc.tuple(amount, fc.boolean()),
        ([n, up]) => `${up ? 'in' : 'de'}crement(${n})`,
        ([n, up]) =>
          (r) => {
            if (up) (r as PNCounterReplica).increment(n)
            else (r as PNCounterReplica).decrement(n)
          },
      )
    case 'gset':
      return named(
        element,
        (e) => `add(${JSON.stringify(e)})`,
        (e) => (r) => {
          ;(r as GSetReplica).add(e)
        },
      )
    case 'orset':
      return named(
        fc.tuple(element, fc.boolean()),
        ([e, add]) => `${add ? 'add' : 'delete'}(${JSON.stringify(e)})`,
        ([e, add]) =>
          (r) => {
            if (add) (r as ORSetReplica).add(e)
            else (r as ORSetReplica).delete(e)
          },
      )
    case 'lww-register':
      return named(
        fc.tuple(element, fc.integer({ min: 0, max: 5 })),
        ([e, k]) => (k === 0 ? 'clear()' : `set(${JSON.stringify(e)})`),
        ([e, k]) =>
          (r) => {
            if (k === 0) (r as LWWRegisterReplica).clear()
            else (r as LWWRegisterReplica).set(e)
          },
      )
    case 'mv-register':
      return named(
        fc.tuple(element, fc.integer({ min: 0, max: 5 })),
        ([e, k]) => (k === 0 ? 'clear()' : `set(${JSON.stringify(e)})`),
        ([e, k]) =>
          (r) => {
            if (k === 0) (r as MVRegisterReplica).clear()
            else (r as MVRegisterReplica).set(e)
          },
      )
    case 'ewflag':
      return named(
        fc.boolean(),
        (on) => (on ? 'enable()' : 'disable()'),
        (on) => (r) => {
          if (on) (r as EWFlagReplica).enable()
          else (r as EWFlagReplica).disable()
        },
      )
    case 'ormap':
      return mapOp(2).map((op) => (r: Replica) => op((r as ORMapReplica).root))
  }
}
