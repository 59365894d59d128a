/**
 * crdt/ benchmarks: mutator and join throughput of the native types, and the
 * resync delta of a 100,000-element ORSet after 10 changes on the other side
 * (target: at most 2 KB; the full state is the baseline beside it).
 */
import { HybridClock } from '../crdt/hlc.ts'
import type { Replica } from '../crdt/replica.ts'
import { agentId } from '../crdt/agent-id.ts'
import { createReplica } from '../crdt/registry.ts'
import type {
  EWFlagReplica,
  GCounterReplica,
  GSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  ORMapReplica,
  ORSetReplica,
  PNCounterReplica,
} from '../crdt/types/index.ts'
import type { NativeType } from '../crdt/catalog.ts'
import { opsPerSecond, timeMs, type Benchmark, type Measurement } from './harness.ts'

function make<R extends Replica>(type: NativeType, id: string, snapshot?: Uint8Array): R {
  return createReplica(type, { agentId: agentId(id), clock: new HybridClock(), snapshot }) as R
}

const OPS = 20_000

/** Ops/s of one mutator, on a fresh replica, each op making, joining, encoding and emitting its delta. */
function mutatorRate(label: string, type: NativeType, setup: (r: Replica) => void, op: (r: Replica, i: number) => void): Measurement {
  const r = make(type, 'bench')
  setup(r)
  op(r, -1) // warm up the code path
  const rate = opsPerSecond(OPS, (i) => op(r, i))
  return { name: `${label} ops/s`, value: rate, unit: 'ops/s', better: 'higher' }
}

const mutators: Benchmark = {
  name: 'crdt/mutators',
  async run() {
    return [
      mutatorRate(
        'gcounter increment',
        'gcounter',
        () => {},
        (r) => {
          ;(r as GCounterReplica).increment()
        },
      ),
      mutatorRate(
        'pncounter increment/decrement',
        'pncounter',
        () => {},
        (r, i) => {
          if (i & 1) (r as PNCounterReplica).decrement()
          else (r as PNCounterReplica).increment()
        },
      ),
      mutatorRate(
        'gset add (distinct)',
        'gset',
        () => {},
        (r, i) => {
          ;(r as GSetReplica).add(`e${i}`)
        },
      ),
      mutatorRate(
        'orset add (distinct)',
        'orset',
        () => {},
        (r, i) => {
          ;(r as ORSetReplica).add(`e${i}`)
        },
      ),
      mutatorRate(
        'orset add+delete',
        'orset',
        () => {},
        (r, i) => {
          const s = r as ORSetReplica
          s.add(`e${i}`)
          s.delete(`e${i}`)
        },
      ),
      mutatorRate(
        'lww-register set',
        'lww-register',
        () => {},
        (r, i) => {
          ;(r as LWWRegisterReplica).set({ step: i })
        },
      ),
      mutatorRate(
        'mv-register set',
        'mv-register',
        () => {},
        (r, i) => {
          ;(r as MVRegisterReplica).set({ step: i })
        },
      ),
      mutatorRate(
        'ewflag enable/disable',
        'ewflag',
        () => {},
        (r, i) => {
          if (i & 1) (r as EWFlagReplica).disable()
          else (r as EWFlagReplica).enable()
        },
      ),
      mutatorRate(
        'ormap set (1,000 keys)',
        'ormap',
        () => {},
        (r, i) => {
          ;(r as ORMapReplica).set(`k${i % 1000}`, i)
        },
      ),
      mutatorRate(
        'ormap nested counter increment',
        'ormap',
        () => {},
        (r, i) => {
          ;(r as ORMapReplica)
            .map(`m${i % 10}`)
            .counter('c')
            .increment()
        },
      ),
      mutatorRate(
        'ormap nested orset add',
        'ormap',
        () => {},
        (r, i) => {
          ;(r as ORMapReplica).orset('s').add(i)
        },
      ),
    ]
  },
}

/** Applies the deltas of `count` local mutations on one replica to another: remote deltas joined per second. */
function remoteDeltaRate(label: string, type: NativeType, op: (r: Replica, i: number) => void): Measurement {
  const a = make(type, 'a')
  const deltas: Uint8Array[] = []
  a.events.on('change', (event) => deltas.push(event.delta))
  for (let i = 0; i < OPS; i++) op(a, i)
  const b = make(type, 'b')
  const rate = opsPerSecond(deltas.length, (i) => {
    b.applyDelta(deltas[i])
  })
  return { name: `${label}: remote deltas applied/s`, value: rate, unit: 'ops/s', better: 'higher' }
}

/** Joins of whole snapshots: `replicas` replicas with `opsEach` operations each, merged into one. */
function snapshotJoinRate(label: string, type: NativeType, replicas: number, opsEach: number, op: (r: Replica, i: number) => void): Measurement {
  const snapshots: Uint8Array[] = []
  for (let k = 0; k < replicas; k++) {
    const r = make(type, `r${k}`)
    for (let i = 0; i < opsEach; i++) op(r, k * opsEach + i)
    snapshots.push(r.snapshot())
  }
  const target = make(type, 'target')
  const rate = opsPerSecond(snapshots.length, (i) => {
    target.applyDelta(snapshots[i])
  })
  const bytes = snapshots.reduce((sum, s) => sum + s.length, 0) / snapshots.length
  return {
    name: `${label}: snapshot joins/s`,
    value: rate,
    unit: 'ops/s',
    better: 'higher',
    note: `${replicas} snapshots of ${opsEach} ops each, ${Math.round(bytes)} bytes on average`,
  }
}

const joins: Benchmark = {
  name: 'crdt/joins',
  async run() {
    return [
      remoteDeltaRate('pncounter', 'pncounter', (r) => {
        ;(r as PNCounterReplica).increment()
      }),
      remoteDeltaRate('orset add', 'orset', (r, i) => {
        ;(r as ORSetReplica).add(`e${i}`)
      }),
      remoteDeltaRate('lww-register set', 'lww-register', (r, i) => {
        ;(r as LWWRegisterReplica).set(i)
      }),
      remoteDeltaRate('ormap nested counter', 'ormap', (r, i) => {
        ;(r as ORMapReplica)
          .map(`m${i % 10}`)
          .counter('c')
          .increment()
      }),
      snapshotJoinRate('pncounter', 'pncounter', 2000, 5, (r) => {
        ;(r as PNCounterReplica).increment()
      }),
      snapshotJoinRate('orset', 'orset', 500, 100, (r, i) => {
        ;(r as ORSetReplica).add(`e${i % 5000}`)
      }),
      snapshotJoinRate('ormap', 'ormap', 500, 50, (r, i) => {
        const m = r as ORMapReplica
        m.set(`k${i % 200}`, i)
        m.counter(`c${i % 7}`).increment()
      }),
    ]
  },
}

const resync: Benchmark = {
  name: 'crdt/orset-resync',
  async run() {
    const n = 100_000
    const a = make<ORSetReplica<string>>('orset', 'a')
    let built = 0
    const buildMs = await timeMs(() => {
      for (let i = 0; i < n; i++) a.add(`element-${i}`)
      built = a.size
    })
    const full = a.snapshot()
    const b = make<ORSetReplica<string>>('orset', 'b', full)
    // 10 changes on the other side: 5 adds, 5 removes spread over the set.
    for (let k = 0; k < 5; k++) {
      b.add(`new-${k}`)
      b.delete(`element-${Math.floor((k + 0.5) * (n / 5))}`)
    }
    const version = a.version()
    let delta: Uint8Array | null = null
    const deltaMs = await timeMs(() => {
      delta = b.deltaSince(version)
    })
    const bytes = delta === null ? 0 : (delta as Uint8Array).length
    const applyMs = await timeMs(() => {
      if (delta) a.applyDelta(delta)
    })
    const converged = a.size === b.size && a.deltaSince(b.version()) === null && b.deltaSince(a.version()) === null
    const note =
      `${built} elements (built in ${buildMs.toFixed(0)} ms); version ${version.length} bytes; ` +
      `deltaSince ${deltaMs.toFixed(2)} ms, apply ${applyMs.toFixed(2)} ms; converged: ${converged}`
    return [
      { name: 'resync delta after 10 changes', value: bytes, unit: 'bytes', better: 'lower', baseline: { label: 'full state', value: full.length }, note },
      {
        name: 'resync delta vs the 2 KB budget',
        value: bytes,
        unit: 'bytes',
        better: 'lower',
        baseline: { label: '2 KB budget', value: 2048 },
        target: '<= 1',
      },
    ]
  },
}

/** The crdt/ benchmarks. */
export const benchmarks: Benchmark[] = [mutators, joins, resync]
