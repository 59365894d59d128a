/**
 * The causal core: RangeSet and CausalContext against a plain-Set model,
 * the context codec, and hostile native states (valid checksum, broken
 * structure) that the decoder must reject with CONCORD_DECODE_ERROR.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { CausalContext, readContext, writeContext } from '../../crdt/causal/causal-context.ts'
import { RangeSet } from '../../crdt/causal/range-set.ts'
import { appendCrc32 } from '../../crdt/types/crc32.ts'
import { decodeState, decodeVersion, MAX_NESTING } from '../../crdt/types/state-codec.ts'
import { typeCode, type NativeType } from '../../crdt/catalog.ts'
import { ORMapReplica, ORSetReplica } from '../../crdt/types/index.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { LAW_SEED, pull } from '../../testing/index.ts'
import { createNative, nativeOp } from './native-ops.ts'
import { type CausalReplica, joinStates } from '../../crdt/types/causal-replica.ts'
import { encodeState } from '../../crdt/types/state-codec.ts'
import { NATIVE_TYPES } from '../../crdt/catalog.ts'
import { bytesEqual } from '../../crdt/codec.ts'

const params = { seed: LAW_SEED, numRuns: 200 }
const counters = fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 40 })

function model(set: RangeSet): number[] {
  return [...set.values()]
}

function sorted(values: Iterable<number>): number[] {
  return [...new Set(values)].sort((a, b) => a - b)
}

describe('RangeSet', () => {
  it('add, delete, has and the set algebra agree with a plain Set', () => {
    fc.assert(
      fc.property(counters, counters, counters, (xs, ys, removed) => {
        const a = new RangeSet()
        for (const x of xs) a.add(x)
        for (const r of removed) a.delete(r)
        const expectA = sorted(xs).filter((x) => !removed.includes(x))
        assert.deepEqual(model(a), expectA)
        const b = RangeSet.from(ys)
        const expectB = sorted(ys)
        assert.deepEqual(model(b), expectB)
        assert.deepEqual(model(a.union(b)), sorted([...expectA, ...expectB]))
        assert.deepEqual(
          model(a.intersect(b)),
          expectA.filter((x) => expectB.includes(x)),
        )
        assert.deepEqual(
          model(a.subtract(b)),
          expectA.filter((x) => !expectB.includes(x)),
        )
        assert.equal(
          a.isSubsetOf(b),
          expectA.every((x) => expectB.includes(x)),
        )
        assert.equal(a.size, expectA.length)
        for (let n = 0; n <= 61; n++) assert.equal(a.has(n), expectA.includes(n))
        // Canonical: ranges are disjoint and non-adjacent.
        const flat = a.flat
        for (let i = 2; i < flat.length; i += 2) assert.ok(flat[i] > flat[i - 1] + 1)
      }),
      params,
    )
  })

  it('addRange merges overlapping and adjacent ranges', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 6 })), { maxLength: 12 }), (ranges) => {
        const set = new RangeSet()
        const expected: number[] = []
        for (const [start, length] of ranges) {
          set.addRange(start, start + length)
          for (let n = start; n <= start + length; n++) expected.push(n)
        }
        assert.deepEqual(model(set), sorted(expected))
      }),
      params,
    )
  })
})

describe('CausalContext', () => {
  const dots = fc.array(fc.record({ replica: fc.constantFrom('a', 'b', 'c'), counter: fc.integer({ min: 1, max: 30 }) }), { maxLength: 30 })

  it('compacts into a version vector plus a dot cloud, and round-trips through its codec', () => {
    fc.assert(
      fc.property(dots, (ds) => {
        const ctx = CausalContext.of(ds)
        const vv = ctx.versionVector()
        for (const d of ds) assert.ok(ctx.has(d))
        for (const [replica, n] of vv) for (let k = 1; k <= n; k++) assert.ok(ctx.has({ replica, counter: k }))
        for (const d of ctx.cloud()) assert.ok(d.counter > (vv.get(d.replica) ?? 0) + 1)
        const encoder = new Encoder()
        writeContext(encoder, ctx)
        const decoder = new Decoder(encoder.finish())
        const back = readContext(decoder)
        decoder.end('context')
        assert.ok(back.equals(ctx))
        assert.equal(ctx.next('a').counter, (ctx.get('a')?.max ?? 0) + 1)
      }),
      params,
    )
  })

  it('union, intersection, difference and subset agree with sets of dots', () => {
    fc.assert(
      fc.property(dots, dots, (xs, ys) => {
        const key = (d: { replica: string; counter: number }) => `${d.replica}:${d.counter}`
        const a = CausalContext.of(xs)
        const b = CausalContext.of(ys)
        const setA = new Set(xs.map(key))
        const setB = new Set(ys.map(key))
        const keys = (ctx: CausalContext) => new Set([...ctx.dots()].map(key))
        assert.deepEqual(keys(a.union(b)), new Set([...setA, ...setB]))
        assert.deepEqual(keys(a.intersect(b)), new Set([...setA].filter((k) => setB.has(k))))
        assert.deepEqual(keys(a.subtract(b)), new Set([...setA].filter((k) => !setB.has(k))))
        assert.equal(
          a.isSubsetOf(b),
          [...setA].every((k) => setB.has(k)),
        )
        assert.equal(a.size, setA.size)
      }),
      params,
    )
  })
})

describe('pure join (joinStates) on causal states', () => {
  it('is idempotent, commutative and associative, and leaves its inputs alone, for every native type', () => {
    for (const type of NATIVE_TYPES) {
      const ops = fc.array(nativeOp(type), { maxLength: 6 })
      fc.assert(
        fc.property(ops, ops, ops, ops, (base, x, y, z) => {
          const root = createNative(type, 'base')
          for (const op of base) op(root)
          const [a, b, c] = ['a', 'b', 'c'].map((id, i) => {
            const r = createNative(type, id)
            pull(r, root)
            for (const op of [x, y, z][i]) op(r)
            return (r as CausalReplica).state
          })
          const enc = (s: typeof a) => encodeState(type, s)
          const inputs = [enc(a), enc(b), enc(c)]
          assert.ok(bytesEqual(enc(joinStates(a, a)), inputs[0]), 'idempotent')
          assert.ok(bytesEqual(enc(joinStates(a, b)), enc(joinStates(b, a))), 'commutative')
          assert.ok(bytesEqual(enc(joinStates(joinStates(a, b), c)), enc(joinStates(a, joinStates(b, c)))), 'associative')
          assert.ok(bytesEqual(enc(a), inputs[0]) && bytesEqual(enc(b), inputs[1]) && bytesEqual(enc(c), inputs[2]), 'inputs unchanged')
        }),
        { seed: LAW_SEED, numRuns: 40 },
      )
    }
  })
})

describe('hostile native states', () => {
  const rejected = (what: string, bytes: Uint8Array, type?: NativeType) => {
    assert.throws(
      () => decodeState(bytes, type),
      (e: unknown) => isConcordError(e, ErrorCodes.DECODE_ERROR),
      what,
    )
  }
  /** A state with a valid checksum: version, type, then whatever `body` writes. */
  const forge = (type: NativeType, body: (e: Encoder) => void): Uint8Array => {
    const e = new Encoder().writeUint8(1).writeUint8(typeCode(type))
    body(e)
    return appendCrc32(e.finish())
  }
  const oneReplica = (e: Encoder, ranges: Array<[number, number]> = [[1, 3]]) => {
    e.writeVarUint(1).writeString('a').writeVarUint(ranges.length)
    let previous = 0
    for (const [start, end] of ranges) {
      e.writeVarUint(start - previous - 1).writeVarUint(end - start)
      previous = end
    }
  }

  it('huge claimed counts in a few bytes are rejected without allocating', () => {
    rejected(
      'context count',
      forge('orset', (e) => e.writeVarUint(2 ** 50)),
    )
    rejected(
      'range count',
      forge('orset', (e) =>
        e
          .writeVarUint(1)
          .writeString('a')
          .writeVarUint(2 ** 40),
      ),
    )
    rejected(
      'store count',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(2 ** 45)
      }),
    )
    rejected(
      'counter beyond the limit',
      forge('orset', (e) => {
        oneReplica(e, [[1, 2 ** 52]])
        e.writeVarUint(0)
      }),
    )
  })

  it('structural violations are rejected', () => {
    const dotSet = (e: Encoder, dots: Array<[number, number]>) => {
      e.writeVarUint(dots.length)
      for (const [index, counter] of dots) e.writeVarUint(index).writeVarUint(counter)
    }
    const element = (e: Encoder, key: string, dots: Array<[number, number]>) => {
      e.writeString(key)
      dotSet(e, dots)
    }
    // Sanity: the forging helpers make a valid state.
    decodeState(
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '"x"', [[0, 1]])
      }),
      'orset',
    )
    rejected(
      'dot outside the context',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '"x"', [[0, 9]])
      }),
    )
    rejected(
      'replica index out of range',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '"x"', [[1, 1]])
      }),
    )
    rejected(
      'dots out of order',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '"x"', [
          [0, 2],
          [0, 1],
        ])
      }),
    )
    rejected(
      'empty nested store',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '"x"', [])
      }),
    )
    rejected(
      'keys out of order',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(2)
        element(e, '"y"', [[0, 1]])
        element(e, '"x"', [[0, 2]])
      }),
    )
    rejected(
      'non-canonical JSON key',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '{"b":1,"a":2}', [[0, 1]])
      }),
    )
    rejected(
      'invalid JSON key',
      forge('orset', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, '{', [[0, 1]])
      }),
    )
    rejected(
      'adjacent ranges',
      forge('orset', (e) => {
        e.writeVarUint(1).writeString('a').writeVarUint(2).writeVarUint(0).writeVarUint(0).writeVarUint(0).writeVarUint(0)
        e.writeVarUint(0)
      }),
    )
    rejected(
      'replicas out of order',
      forge('orset', (e) => {
        e.writeVarUint(2).writeString('b').writeVarUint(1).writeVarUint(0).writeVarUint(0).writeString('a').writeVarUint(1).writeVarUint(0).writeVarUint(0)
        e.writeVarUint(0)
      }),
    )
    rejected(
      'zero counter total',
      forge('gcounter', (e) => {
        oneReplica(e)
        e.writeVarUint(1).writeVarUint(0).writeVarUint(1).writeVarUint(0)
      }),
    )
    rejected(
      'unknown map field type',
      forge('ormap', (e) => {
        oneReplica(e)
        e.writeVarUint(1)
        element(e, 'yjs/x', [[0, 1]])
      }),
    )
    rejected('unknown type code', appendCrc32(new Uint8Array([1, 99, 0, 0])))
    rejected('future format version', appendCrc32(new Uint8Array([2, 4, 0, 0])))
    rejected(
      'wrong type',
      forge('orset', (e) => {
        e.writeVarUint(0)
        e.writeVarUint(0)
      }),
      'gset',
    )
    rejected(
      'trailing bytes',
      forge('orset', (e) => {
        e.writeVarUint(0)
        e.writeVarUint(0)
        e.writeUint8(7)
      }),
    )
    rejected('bad checksum', new Uint8Array([1, 4, 0, 0, 1, 2, 3, 4]))
    assert.throws(
      () =>
        decodeVersion(
          forge('orset', (e) => {
            e.writeVarUint(0)
            oneReplica(e)
          }),
        ),
      (e: unknown) => isConcordError(e, ErrorCodes.DECODE_ERROR),
      'dead dots outside seen',
    )
  })

  it('maps nested deeper than the limit and deeply nested JSON are rejected', () => {
    const deepMap = forge('ormap', (e) => {
      oneReplica(e, [[1, 1]])
      for (let i = 0; i <= MAX_NESTING + 1; i++) e.writeVarUint(1).writeString(`ormap/m${i}`)
      e.writeVarUint(1).writeString('ewflag/f').writeVarUint(1).writeVarUint(0).writeVarUint(1)
    })
    rejected('deep map', deepMap)
    const deepJson = '['.repeat(10_000) + ']'.repeat(10_000)
    rejected(
      'deep JSON',
      forge('mv-register', (e) => {
        oneReplica(e, [[1, 1]])
        e.writeVarUint(1).writeVarUint(0).writeVarUint(1).writeString(deepJson)
      }),
    )
    const m = new ORMapReplica({ agentId: agentId('m') })
    let view = m.root
    for (let i = 0; i < MAX_NESTING - 1; i++) view = view.map(`m${i}`)
    view.flag('f').enable()
    assert.throws(
      () => view.map('one-too-deep').flag('f'),
      (e: unknown) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
    )
    const copy = new ORMapReplica({ agentId: agentId('n'), snapshot: m.snapshot() })
    assert.deepEqual(copy.value(), m.value(), 'the deepest legal nesting loads')
  })

  it('a rejected delta leaves the replica unchanged and usable', () => {
    const r = new ORSetReplica<string>({ agentId: agentId('r') })
    r.add('x')
    const before = r.snapshot()
    const bad = forge('orset', (e) => {
      oneReplica(e)
      e.writeVarUint(1).writeString('"y"').writeVarUint(1).writeVarUint(0).writeVarUint(9)
    })
    assert.throws(
      () => r.applyDelta(bad),
      (e: unknown) => isConcordError(e, ErrorCodes.DECODE_ERROR),
    )
    assert.deepEqual(r.snapshot(), before)
    r.add('y')
    assert.deepEqual(r.values(), ['x', 'y'])
  })
})
