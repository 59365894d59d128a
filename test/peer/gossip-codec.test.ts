/**
 * The gossip unit codec: round trip (property, fixed seed), and every bad
 * input is a DecodeError with a stable code, never a crash.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { KNOWN_TYPES } from '../../sync/index.ts'
import { decodeGossipUnit, encodeGossipUnit, GOSSIP_FORMAT, type GossipUnit } from '../../peer/gossip-codec.ts'

const unitArb: fc.Arbitrary<GossipUnit> = fc.record({
  run: fc.nat(),
  seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  agent: fc.string({ minLength: 1, maxLength: 40 }),
  entries: fc.array(fc.record({
    name: fc.string({ minLength: 1, maxLength: 30 }),
    replicaType: fc.constantFrom(...KNOWN_TYPES),
    delta: fc.uint8Array({ maxLength: 64 }),
  }), { minLength: 1, maxLength: 5 }),
})

/** The unit as plain objects (fast-check builds records without a prototype). */
const plain = (unit: GossipUnit): GossipUnit => ({
  run: unit.run, seq: unit.seq, agent: unit.agent,
  entries: unit.entries.map((e) => ({ name: e.name, replicaType: e.replicaType, delta: Uint8Array.from(e.delta) })),
})

const isDecodeError = (error: unknown) => isConcordError(error, ErrorCodes.DECODE_ERROR)

test('gossip codec: decode(encode(unit)) is the unit', () => {
  fc.assert(fc.property(unitArb, (unit) => {
    assert.deepEqual(decodeGossipUnit(encodeGossipUnit(unit)), plain(unit))
  }), { seed: 4242, numRuns: 300 })
})

test('gossip codec: every truncation and every single-byte change decodes or fails with CONCORD_DECODE_ERROR', () => {
  fc.assert(fc.property(unitArb, fc.nat(), fc.integer({ min: 0, max: 255 }), (unit, at, value) => {
    const bytes = encodeGossipUnit(unit)
    assert.throws(() => decodeGossipUnit(bytes.subarray(0, at % bytes.length)), isDecodeError)
    const changed = bytes.slice()
    changed[at % bytes.length] = value
    try {
      decodeGossipUnit(changed)
    } catch (error) {
      assert.ok(isDecodeError(error), String(error))
    }
  }), { seed: 4243, numRuns: 300 })
})

test('gossip codec: bad inputs are typed errors', () => {
  const good = encodeGossipUnit({ run: 1, seq: 1, agent: 'a', entries: [{ name: 'n', replicaType: 'pncounter', delta: new Uint8Array([1]) }] })
  const cases: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array()],
    ['another format', Uint8Array.of(GOSSIP_FORMAT + 1, ...good.subarray(1))],
    ['trailing byte', Uint8Array.of(...good, 0)],
    ['seq 0', encodeGossipUnit({ run: 1, seq: 1, agent: 'a', entries: [] }).map((b, i) => (i === 2 ? 0 : b))],
    ['no entries', encodeGossipUnit({ run: 1, seq: 1, agent: 'a', entries: [] })],
    ['empty agent', encodeGossipUnit({ run: 1, seq: 1, agent: '', entries: [{ name: 'n', replicaType: 'pncounter', delta: new Uint8Array() }] })],
    ['empty name', encodeGossipUnit({ run: 1, seq: 1, agent: 'a', entries: [{ name: '', replicaType: 'pncounter', delta: new Uint8Array() }] })],
    ['unknown type', encodeGossipUnit({ run: 1, seq: 1, agent: 'a', entries: [{ name: 'n', replicaType: 'bogus' as never, delta: new Uint8Array() }] })],
    ['huge count', Uint8Array.of(GOSSIP_FORMAT, 1, 1, 1, 97, 0xff, 0xff, 0xff, 0x0f)],
    ['not bytes', 'text' as unknown as Uint8Array],
  ]
  for (const [what, bytes] of cases) assert.throws(() => decodeGossipUnit(bytes), isDecodeError, what)
})
