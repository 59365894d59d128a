/**
 * The CRDT law suite: one set of property tests run against every
 * replicated type, native CRDT or document, ours or a third party's,
 * through the {@link Replica} interface only, under any test runner:
 *
 * ```ts
 * import { describe, it } from 'node:test'
 * import fc from 'fast-check'
 * import { createReplica, agentId } from 'concord-crdt/crdt'
 * import { runCrdtLaws } from 'concord-crdt/testing'
 *
 * runCrdtLaws({ describe, it }, {
 *   type: 'orset',
 *   create: (id) => createReplica('orset', { agentId: agentId(id) }),
 *   randomOp: fc.string().map((s) => (r) => (r as ORSetReplica<string>).add(s)),
 * })
 * ```
 *
 * Laws checked (fast-check, a fixed seed shown in the suite's title;
 * `CONCORD_SEED=<n>` or `seed` replays a run, `CONCORD_LAW_RUNS=<n>` or
 * `numRuns` changes the number of runs; needs the `fast-check` package, a
 * peer dependency of `concord-crdt/testing`):
 * - join (a replica pulling another's `deltaSince(own version)`) is
 *   idempotent, commutative and associative;
 * - a local mutation's delta (its `change` event) applied elsewhere gives the
 *   mutation's effect;
 * - `deltaSince(v)` applied to a replica at `v` equals the full join,
 *   removals included;
 * - codec round-trip: snapshot -> load -> snapshot is byte-equal;
 * - convergence: 3..7 replicas, random ops, random delivery of the change
 *   deltas with drops, duplicates and reordering, then anti-entropy
 *   (pairwise `deltaSince`) -> all equal;
 * - bad input (empty, truncated, bit-flipped, random buffers) to
 *   `applyDelta`, to loading a snapshot and to `deltaSince` gives
 *   `CONCORD_DECODE_ERROR` and leaves the state byte-equal; a bit-flipped or
 *   random buffer that happens to decode must leave a consistent replica.
 *
 * "Full join of B into A" is `A.applyDelta(B.deltaSince(A.version()))`; the
 * "full state" of B is `B.deltaSince(fresh.version())` for a fresh replica.
 */
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { bytesEqual } from '../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import { createReplica } from '../crdt/registry.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import { agentId } from '../crdt/agent-id.ts'
import type { TestRunner } from './runner.ts'

/** A random local mutation of a replica. */
export type RandomOp = (replica: Replica) => void

/** What the law suite needs to know of a type. */
export interface LawSpec {
  /** The type tag (used in test names and by the default `load`). */
  readonly type: ReplicaType
  /** A new, empty replica with the given agent id. */
  create(agentId: string): Replica
  /** A random local mutation. Must not throw for any replica state it is given. */
  readonly randomOp: fc.Arbitrary<RandomOp>
  /**
   * Whether two replicas hold the same state. Default: deep-equal `value()`
   * and byte-equal `snapshot()`.
   */
  equal?(a: Replica, b: Replica): boolean
  /**
   * Loads a replica from a snapshot (`createReplica(type, { agentId, snapshot })`
   * by default, from crdt/registry.ts). Must throw DecodeError on bad bytes.
   */
  load?(snapshot: Uint8Array, agentId: string): Replica
  /** Runs per property (default 30; env `CONCORD_LAW_RUNS` overrides). */
  readonly numRuns?: number
  /** The fast-check seed (default {@link LAW_SEED}). */
  readonly seed?: number
  /**
   * When true (default), every truncation of a valid delta, snapshot or
   * version must be rejected. Set false for formats where a prefix can be a
   * valid input; then a truncation that decodes must leave a consistent replica.
   */
  readonly truncationAlwaysInvalid?: boolean
  /**
   * When true, every bit-flipped or random buffer must be rejected (the
   * format carries a checksum). Default false: a flipped buffer may decode to
   * a valid different input, which must then leave a consistent replica.
   */
  readonly corruptionAlwaysDetected?: boolean
  /** Most ops per replica in generated histories (default 8). */
  readonly maxOps?: number
}

/** The seed of every law suite in this process that names none (env `CONCORD_SEED`, else fixed). */
export const LAW_SEED: number = (() => {
  const raw = process.env.CONCORD_SEED
  if (raw !== undefined && raw !== '') {
    const parsed = Number(raw)
    if (!Number.isSafeInteger(parsed)) throw new Error(`CONCORD_SEED must be an integer, got ${raw}`)
    return parsed
  }
  return 20261129
})()

function defaultRuns(spec: LawSpec): number {
  const raw = process.env.CONCORD_LAW_RUNS
  if (raw) {
    const parsed = Number(raw)
    if (!Number.isSafeInteger(parsed) || parsed < 1) throw new Error(`CONCORD_LAW_RUNS must be a positive integer, got ${raw}`)
    return parsed
  }
  return spec.numRuns ?? 30
}

/** Default equality: deep-equal values and byte-equal snapshots. */
export function defaultEqual(a: Replica, b: Replica): boolean {
  try {
    assert.deepStrictEqual(a.value(), b.value())
  } catch {
    return false
  }
  return bytesEqual(a.snapshot(), b.snapshot())
}

/** Pulls everything `source` has into `target`; returns what applyDelta returned (false if nothing was sent). */
export function pull(target: Replica, source: Replica): boolean {
  const delta = source.deltaSince(target.version())
  return delta === null ? false : target.applyDelta(delta)
}

/** Runs `fn` and returns the deltas of the local `change` events it caused. */
export function recordLocal(replica: Replica, fn: () => void): Uint8Array[] {
  const deltas: Uint8Array[] = []
  const off = replica.events.on('change', (event) => {
    if (event.local) deltas.push(event.delta)
  })
  try {
    fn()
  } finally {
    off()
  }
  return deltas
}

/** Describes a replica for failure messages. */
function describeReplica(r: Replica): string {
  let value: string
  try {
    value = JSON.stringify(r.value())
  } catch (error) {
    value = `<value() threw ${String(error)}>`
  }
  if (value.length > 400) value = `${value.slice(0, 400)}...`
  return `${r.type}@${r.agentId} ${value}`
}

/** Registers the law tests of one type with `runner`. */
export function runCrdtLaws(runner: TestRunner, spec: LawSpec): void {
  const { describe } = runner
  const it = (name: string, body: () => void | Promise<void>): void => {
    runner.it(name, async () => {
      await body()
    })
  }
  const seed = spec.seed ?? LAW_SEED
  const equal = spec.equal ?? defaultEqual
  const runs = defaultRuns(spec)
  const maxOps = spec.maxOps ?? 8
  const truncationStrict = spec.truncationAlwaysInvalid ?? true
  const corruptionStrict = spec.corruptionAlwaysDetected ?? false
  const loadSnapshot: (snapshot: Uint8Array, id: string) => Replica = spec.load
    ? spec.load.bind(spec)
    : (snapshot, id) => createReplica(spec.type, { agentId: agentId(id), snapshot })
  const params = { seed, numRuns: runs }
  const ops = fc.array(spec.randomOp, { maxLength: maxOps })
  const nonEmptyOps = fc.array(spec.randomOp, { minLength: 1, maxLength: maxOps })

  const assertEqual = (a: Replica, b: Replica, what: string): void => {
    assert.ok(equal(a, b), `${what}: replicas differ\n  ${describeReplica(a)}\n  ${describeReplica(b)}`)
  }
  const build = (id: string, history: RandomOp[], base?: Replica): Replica => {
    const replica = spec.create(id)
    if (base) pull(replica, base)
    for (const op of history) op(replica)
    return replica
  }
  /** A common base history and three concurrent continuations of it. */
  const scenario = fc.record({ base: ops, a: ops, b: ops, c: ops })
  const diverge = (s: { base: RandomOp[]; a: RandomOp[]; b: RandomOp[]; c: RandomOp[] }): Replica[] => {
    const base = build('base', s.base)
    return [build('a', s.a, base), build('b', s.b, base), build('c', s.c, base)]
  }
  /** The full state of `r` as a delta (what an empty replica lacks). */
  const full = (r: Replica): Uint8Array | null => r.deltaSince(spec.create('fresh').version())
  const apply = (target: Replica, delta: Uint8Array | null): boolean => (delta === null ? false : target.applyDelta(delta))

  describe(`law suite: ${spec.type} (seed ${seed}, ${runs} runs)`, () => {
    it('join is idempotent', () => {
      fc.assert(
        fc.property(scenario, nonEmptyOps, (s, more) => {
          const [a, b] = diverge(s)
          const before = b.snapshot()
          assert.equal(pull(b, b), false, 'joining a replica with itself changes nothing')
          assert.ok(bytesEqual(before, b.snapshot()), 'self-join left the snapshot unchanged')
          const x = spec.create('x')
          const fa = full(a)
          apply(x, fa)
          const once = x.snapshot()
          assert.equal(apply(x, fa), false, 'a full state applied twice: the second apply returns false')
          assert.ok(bytesEqual(once, x.snapshot()), 'the second apply left the snapshot unchanged')
          // A mutation's delta applied twice.
          const y = spec.create('y')
          pull(y, a)
          let deltas: Uint8Array[] = []
          deltas = recordLocal(a, () => {
            for (const op of more) op(a)
          })
          for (const d of deltas) y.applyDelta(d)
          const afterOnce = y.snapshot()
          for (const d of deltas) assert.equal(y.applyDelta(d), false, 'a mutation delta applied twice: the second apply returns false')
          assert.ok(bytesEqual(afterOnce, y.snapshot()))
          assertEqual(a, y, 'mutation deltas')
        }),
        params,
      )
    })

    it('join is commutative', () => {
      fc.assert(
        fc.property(scenario, (s) => {
          const [a, b] = diverge(s)
          const fa = full(a)
          const fb = full(b)
          const x1 = spec.create('x')
          apply(x1, fa)
          apply(x1, fb)
          const x2 = spec.create('x')
          apply(x2, fb)
          apply(x2, fa)
          assertEqual(x1, x2, 'a ⊔ b vs b ⊔ a')
          // Pulling in both directions converges.
          pull(a, b)
          pull(b, a)
          assertEqual(a, x1, 'pulled a vs x')
          assertEqual(b, x1, 'pulled b vs x')
        }),
        params,
      )
    })

    it('join is associative', () => {
      fc.assert(
        fc.property(scenario, (s) => {
          const [a, b, c] = diverge(s)
          const left = spec.create('x')
          apply(left, full(a))
          apply(left, full(b))
          apply(left, full(c))
          const bc = spec.create('y')
          apply(bc, full(b))
          apply(bc, full(c))
          const right = spec.create('x')
          apply(right, full(a))
          apply(right, full(bc))
          assertEqual(left, right, '(a ⊔ b) ⊔ c vs a ⊔ (b ⊔ c)')
        }),
        params,
      )
    })

    it("a mutation's delta applied elsewhere equals the mutation's effect", () => {
      fc.assert(
        fc.property(scenario, nonEmptyOps, (s, more) => {
          const [a, b] = diverge(s)
          pull(a, b)
          pull(b, a)
          assertEqual(a, b, 'converged before the mutation')
          for (const op of more) {
            const deltas = recordLocal(a, () => op(a))
            for (const d of deltas) b.applyDelta(d)
            assertEqual(a, b, 'after one mutation and its deltas')
          }
        }),
        params,
      )
    })

    it('deltaSince(v) applied at v equals the full join (removals included)', () => {
      fc.assert(
        fc.property(scenario, (s) => {
          const [a, b] = diverge(s)
          const viaDelta = build('b', [], b)
          const viaFull = build('b', [], b)
          assertEqual(viaDelta, b, 'copy of b')
          apply(viaDelta, a.deltaSince(viaDelta.version()))
          apply(viaFull, full(a))
          assertEqual(viaDelta, viaFull, 'delta join vs full join')
          // And the delta is enough in the other direction too.
          const aCopy = build('a', [], a)
          apply(aCopy, b.deltaSince(aCopy.version()))
          assertEqual(aCopy, viaFull, 'a pulled b vs b pulled a')
        }),
        params,
      )
    })

    it('codec round-trip: snapshot -> load -> snapshot is byte-equal', () => {
      fc.assert(
        fc.property(scenario, (s) => {
          for (const r of diverge(s)) {
            const snap = r.snapshot()
            const loaded = loadSnapshot(snap, r.agentId)
            assert.ok(bytesEqual(loaded.snapshot(), snap), 'snapshot of the loaded replica is byte-equal')
            assert.deepStrictEqual(loaded.value(), r.value())
            assert.ok(bytesEqual(loaded.version(), r.version()), 'versions equal')
            assert.equal(r.deltaSince(loaded.version()) === null, r.deltaSince(r.version()) === null)
          }
        }),
        params,
      )
    })

    it('convergence: 3..7 replicas, lossy duplicating reordering delivery, then anti-entropy', () => {
      const step = fc.oneof(
        { weight: 3, arbitrary: fc.record({ kind: fc.constant('op' as const), who: fc.nat(), op: spec.randomOp }) },
        {
          weight: 4,
          arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat(), fate: fc.constantFrom('deliver', 'deliver', 'drop', 'duplicate') }),
        },
      )
      fc.assert(
        fc.property(fc.integer({ min: 3, max: 7 }), fc.array(step, { maxLength: 40 }), fc.nat(), (n, steps, order) => {
          const replicas = Array.from({ length: n }, (_, i) => spec.create(`r${i}`))
          const pending: Array<{ to: number; delta: Uint8Array }> = []
          replicas.forEach((r, i) =>
            r.events.on('change', (event) => {
              if (!event.local) return
              for (let j = 0; j < n; j++) if (j !== i) pending.push({ to: j, delta: event.delta })
            }),
          )
          for (const s of steps) {
            if (s.kind === 'op') {
              s.op(replicas[s.who % n])
            } else if (pending.length > 0) {
              const index = s.pick % pending.length
              const message = pending[index]
              if (s.fate !== 'duplicate') pending.splice(index, 1)
              if (s.fate !== 'drop') replicas[message.to].applyDelta(message.delta)
            }
          }
          // Deliver a rotation of what is left, then anti-entropy in both directions.
          const rest = pending.splice(0)
          for (let k = 0; k < rest.length; k++) {
            const message = rest[(k + order) % rest.length]
            if ((k + order) % 3 !== 0) replicas[message.to].applyDelta(message.delta)
          }
          for (let round = 0; round < 2; round++) {
            for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (i !== j) pull(replicas[i], replicas[j])
          }
          for (let i = 1; i < n; i++) assertEqual(replicas[0], replicas[i], `replica r0 vs r${i}`)
        }),
        params,
      )
    })

    it('bad input: typed error, state unchanged, never another exception', () => {
      const expectRejected = (what: string, fn: () => unknown): void => {
        try {
          fn()
        } catch (error) {
          assert.ok(isConcordError(error, ErrorCodes.DECODE_ERROR), `${what}: expected CONCORD_DECODE_ERROR, got ${String(error)}`)
          return
        }
        assert.fail(`${what}: accepted`)
      }
      let accepted = false
      /** Runs `fn` on `r`; it must either throw DecodeError with the state unchanged, or succeed leaving a consistent replica. */
      const tolerate = (what: string, r: Replica, fn: () => unknown, mustReject: boolean): void => {
        const before = r.snapshot()
        try {
          fn()
        } catch (error) {
          assert.ok(isConcordError(error, ErrorCodes.DECODE_ERROR), `${what}: expected CONCORD_DECODE_ERROR, got ${String(error)}`)
          assert.ok(bytesEqual(before, r.snapshot()), `${what}: the state changed although the input was rejected`)
          return
        }
        assert.ok(!mustReject, `${what}: accepted`)
        accepted = true
        // Accepted (a valid different input): the replica must stay consistent.
        const snap = r.snapshot()
        const again = loadSnapshot(snap, r.agentId)
        assert.ok(bytesEqual(again.snapshot(), snap), `${what}: accepted, but the replica no longer round-trips`)
        r.value()
        r.version()
      }
      const flip = (bytes: Uint8Array, bit: number): Uint8Array => {
        const out = bytes.slice()
        if (out.length > 0) out[Math.floor(bit / 8) % out.length] ^= 1 << (bit % 8)
        return out
      }
      const inputs = fc.record({
        s: scenario,
        cuts: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        bits: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        random: fc.uint8Array({ maxLength: 64 }),
      })
      fc.assert(
        fc.property(inputs, ({ s, cuts, bits, random }) => {
          const [a, b] = diverge(s)
          const empty = new Uint8Array(0)
          expectRejected('applyDelta(empty)', () => b.applyDelta(empty))
          expectRejected('load(empty)', () => loadSnapshot(empty, 'z'))
          expectRejected('deltaSince(empty)', () => a.deltaSince(empty))
          const samples: Array<[string, Uint8Array, (r: Replica, bytes: Uint8Array) => unknown, Replica]> = []
          const delta = a.deltaSince(b.version())
          if (delta) samples.push(['applyDelta', delta, (r, bytes) => r.applyDelta(bytes), b])
          samples.push(['load', a.snapshot(), (_r, bytes) => loadSnapshot(bytes, 'z'), b])
          samples.push(['deltaSince', b.version(), (r, bytes) => r.deltaSince(bytes), a])
          for (const [what, valid, call, target] of samples) {
            for (const cut of cuts) {
              const truncated = valid.subarray(0, cut % valid.length)
              if (truncated.length === 0) continue
              tolerate(`${what}(truncated to ${truncated.length}/${valid.length})`, target, () => call(target, truncated), truncationStrict)
            }
            for (const bit of bits) {
              tolerate(`${what}(bit ${bit % (valid.length * 8)} flipped)`, target, () => call(target, flip(valid, bit)), corruptionStrict)
            }
            tolerate(`${what}(random ${random.length} bytes)`, target, () => call(target, random), corruptionStrict)
          }
          // After all of that, the replicas still work, and converge unless a
          // corrupted input was accepted (it may reuse a dot with another payload).
          pull(a, b)
          pull(b, a)
          if (!accepted) assertEqual(a, b, 'after bad input, replicas still converge')
        }),
        params,
      )
    })
  })
}
