/**
 * The gossip message codec: round trip (property, fixed seed), and every bad
 * input is a DecodeError with a stable code, never a crash.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { KNOWN_TYPES, type DeltaEntry } from '../../sync/index.ts'
import { decodeGossipMessage, encodeGossipMessage, gossipHeaderBytes, gossipUnitBytes, GOSSIP_FORMAT, type GossipMessage } from '../../peer/gossip-codec.ts'

const entryArb: fc.Arbitrary<DeltaEntry> = fc.record({
  name: fc.string({ minLength: 1, maxLength: 30 }),
  replicaType: fc.constantFrom(...KNOWN_TYPES),
  delta: fc.uint8Array({ maxLength: 64 }),
})

const messageArb: fc.Arbitrary<GossipMessage> = fc.record({
  run: fc.nat(),
  seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  agent: fc.string({ minLength: 1, maxLength: 40 }),
  units: fc.array(fc.array(entryArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
})

/** The message as plain objects (fast-check builds records without a prototype). */
const plain = (message: GossipMessage): GossipMessage => ({
  run: message.run,
  seq: message.seq,
  agent: message.agent,
  units: message.units.map((unit) => unit.map((e) => ({ name: e.name, replicaType: e.replicaType, delta: Uint8Array.from(e.delta) }))),
})

const isDecodeError = (error: unknown) => isConcordError(error, ErrorCodes.DECODE_ERROR)

test('gossip codec: decode(encode(message)) is the message; the size helpers bound the encoding', () => {
  fc.assert(
    fc.property(messageArb, (message) => {
      const bytes = encodeGossipMessage(message)
      assert.deepEqual(decodeGossipMessage(bytes), plain(message))
      const bound = gossipHeaderBytes(message.agent) + message.units.reduce((total, unit) => total + gossipUnitBytes(unit), 0)
      assert.ok(bytes.byteLength <= bound, `${bytes.byteLength} <= ${bound}`)
    }),
    { seed: 4242, numRuns: 300 },
  )
})

test('gossip codec: every truncation and every single-byte change decodes or fails with CONCORD_DECODE_ERROR', () => {
  fc.assert(
    fc.property(messageArb, fc.nat(), fc.integer({ min: 0, max: 255 }), (message, at, value) => {
      const bytes = encodeGossipMessage(message)
      assert.throws(() => decodeGossipMessage(bytes.subarray(0, at % bytes.length)), isDecodeError)
      const changed = bytes.slice()
      changed[at % bytes.length] = value
      try {
        decodeGossipMessage(changed)
      } catch (error) {
        assert.ok(isDecodeError(error), String(error))
      }
    }),
    { seed: 4243, numRuns: 300 },
  )
})

test('gossip codec: bad inputs are typed errors', () => {
  const entry = (name: string, replicaType = 'pncounter'): DeltaEntry => ({ name, replicaType: replicaType as never, delta: new Uint8Array([1]) })
  const message = (patch: Partial<GossipMessage>): Uint8Array => encodeGossipMessage({ run: 1, seq: 1, agent: 'a', units: [[entry('n')]], ...patch })
  const good = message({})
  const cases: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array()],
    ['another format', Uint8Array.of(GOSSIP_FORMAT + 1, ...good.subarray(1))],
    ['trailing byte', Uint8Array.of(...good, 0)],
    ['seq 0', Uint8Array.of(GOSSIP_FORMAT, 1, 0, ...good.subarray(3))],
    ['no units', message({ units: [] })],
    ['an empty unit', message({ units: [[entry('n')], []] })],
    ['empty agent', message({ agent: '' })],
    ['empty name', message({ units: [[entry('')]] })],
    ['unknown type', message({ units: [[entry('n', 'bogus')]] })],
    ['huge count', Uint8Array.of(GOSSIP_FORMAT, 1, 1, 1, 97, 0xff, 0xff, 0xff, 0x0f)],
    ['not bytes', 'text' as unknown as Uint8Array],
  ]
  for (const [what, bytes] of cases) assert.throws(() => decodeGossipMessage(bytes), isDecodeError, what)
})
