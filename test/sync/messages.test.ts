import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Encoder } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { Reassembler, splitIntoChunks } from '../../sync/chunking.ts'
import { FRAME_FORMAT, KNOWN_TYPES, MessageType, decodeMessage, encodeMessage, isCommitMessage, isHandshakeMessage, type Message } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { matchesFilter } from '../../sync/names.ts'

const name = fc.string({ minLength: 1, maxLength: 40 })
const type = fc.constantFrom(...KNOWN_TYPES)
const bytes = fc.uint8Array({ maxLength: 200 })
const seq = fc.integer({ min: 1, max: 2 ** 40 })
const entry = fc.record({ name, replicaType: type, delta: bytes })

const message: fc.Arbitrary<Message> = fc.oneof(
  fc.record({
    type: fc.constant('hello' as const),
    minVersion: fc.integer({ min: 0, max: 5 }),
    maxVersion: fc.integer({ min: 5, max: 10 }),
    agentId: fc.string({ minLength: 1, maxLength: 30 }).map(agentId),
    token: fc.string({ maxLength: 50 }),
    filter: fc.oneof(
      fc.constant({}),
      fc.record({ names: fc.array(name, { maxLength: 5 }), prefixes: fc.array(fc.string({ maxLength: 10 }), { maxLength: 5 }) }),
    ),
    maxFrameBytes: fc.integer({ min: 1, max: 2 ** 30 }),
    window: fc.integer({ min: 1, max: 10_000 }),
    extensions: fc.array(fc.record({ key: fc.string({ maxLength: 10 }), value: bytes }), { maxLength: 3 }),
  }),
  fc.record({ type: fc.constant('hello-ok' as const), version: fc.nat(100) }),
  fc.record({
    type: fc.constant('refuse' as const),
    reason: fc.constantFrom('version' as const, 'auth' as const, 'protocol' as const, 'limit' as const, 'shutdown' as const, 'other' as const),
    message: fc.string({ maxLength: 100 }),
    minVersion: fc.nat(5),
    maxVersion: fc.nat(5),
  }),
  fc.record({ type: fc.constant('versions' as const), entries: fc.array(fc.record({ name, replicaType: type, version: bytes }), { maxLength: 5 }) }),
  fc.record({ type: fc.constant('delta' as const), seq, entry }),
  fc.record({ type: fc.constant('transaction' as const), seq, entries: fc.array(entry, { minLength: 1, maxLength: 4 }) }),
  fc.record({
    type: fc.constant('transaction' as const),
    seq,
    entries: fc.array(entry, { minLength: 1, maxLength: 4 }),
    independent: fc.constant(true as const),
  }),
  fc.record({ type: fc.constant('ack' as const), seq: fc.nat() }),
  fc.record({ type: fc.constant('done' as const), seq: fc.nat() }),
  fc.record({ type: fc.constant('request' as const) }),
  fc.record({ type: fc.constant('reject' as const), seq, name, code: fc.constantFrom(...Object.values(ErrorCodes)), message: fc.string({ maxLength: 50 }) }),
  fc.record({
    type: fc.constant('chunk' as const),
    id: fc.nat(),
    index: fc.nat(3),
    count: fc.integer({ min: 4, max: 9 }),
    totalBytes: fc.integer({ min: 200, max: 1000 }),
    bytes,
  }),
  fc.record({ type: fc.constant('auth' as const), proof: fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ minLength: 32, maxLength: 32 })) }),
  fc.record({
    type: fc.constant('presence' as const),
    entries: fc.array(
      fc.record({
        agent: fc.string({ minLength: 1, maxLength: 30 }),
        peer: fc.string({ minLength: 1, maxLength: 30 }),
        clock: fc.nat(),
        ttlMs: fc.nat(600_000),
        name: fc.oneof(fc.constant(''), name),
        state: bytes,
      }),
      { minLength: 1, maxLength: 5 },
    ),
  }),
)

function normalize(m: Message): unknown {
  return JSON.parse(JSON.stringify(m, (_k, v) => (v instanceof Uint8Array ? [...v] : v)))
}

test('messages: every message round-trips', () => {
  fc.assert(
    fc.property(message, (m) => {
      const decoded = decodeMessage(encodeMessage(m))
      assert.deepEqual(normalize(decoded as Message), normalize(m))
    }),
    { seed: 42, numRuns: 500 },
  )
})

test('messages: every truncation and every bit flip is a DecodeError or a valid message, never another exception', () => {
  fc.assert(
    fc.property(message, fc.nat(), fc.nat(7), (m, at, bit) => {
      const frame = encodeMessage(m)
      for (let cut = 0; cut < frame.length; cut++) {
        try {
          decodeMessage(frame.subarray(0, cut))
          // a prefix may itself be a valid shorter message (e.g. an empty list); that is fine
        } catch (error) {
          assert.ok(isConcordError(error, ErrorCodes.DECODE_ERROR), String(error))
        }
      }
      const flipped = frame.slice()
      flipped[at % flipped.length] ^= 1 << bit
      try {
        decodeMessage(flipped)
      } catch (error) {
        assert.ok(isConcordError(error, ErrorCodes.DECODE_ERROR), String(error))
      }
    }),
    { seed: 7, numRuns: 300 },
  )
})

test('messages: bad input gives DecodeError', () => {
  const bad = (frame: Uint8Array): void => {
    assert.throws(
      () => decodeMessage(frame),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
    )
  }
  bad(new Uint8Array([]))
  bad(new Uint8Array([2, MessageType.ack, 0])) // unknown frame format
  bad(new Uint8Array([FRAME_FORMAT, MessageType.ack, 0, 0])) // trailing byte
  bad(new Uint8Array([FRAME_FORMAT, MessageType.delta, 0])) // seq 0
  bad(
    new Encoder().writeUint8(1).writeUint8(MessageType.delta).writeVarUint(1).writeString('n').writeString('not-a-type').writeBytes(new Uint8Array(1)).finish(),
  )
  bad(new Encoder().writeUint8(1).writeUint8(MessageType.delta).writeVarUint(1).writeString('').writeString('yjs').writeBytes(new Uint8Array(1)).finish())
  bad(new Encoder().writeUint8(1).writeUint8(MessageType.transaction).writeVarUint(1).writeVarUint(0).finish()) // empty transaction
  bad(new Encoder().writeUint8(1).writeUint8(MessageType.independent).writeVarUint(1).writeVarUint(0).finish()) // empty INDEPENDENT
  bad(
    new Encoder()
      .writeUint8(1)
      .writeUint8(MessageType.versions)
      .writeVarUint(2 ** 40)
      .finish(),
  ) // hostile count
  bad(new Encoder().writeUint8(1).writeUint8(MessageType.hello).writeVarUint(3).writeVarUint(1).finish()) // min > max
  bad(
    new Encoder()
      .writeUint8(1)
      .writeUint8(MessageType.chunk)
      .writeVarUint(0)
      .writeVarUint(5)
      .writeVarUint(5)
      .writeVarUint(10)
      .writeBytes(new Uint8Array(1))
      .finish(),
  ) // index >= count
  bad(
    new Encoder()
      .writeUint8(1)
      .writeUint8(MessageType.chunk)
      .writeVarUint(0)
      .writeVarUint(0)
      .writeVarUint(1)
      .writeVarUint(1)
      .writeBytes(new Uint8Array(2))
      .finish(),
  ) // part > whole
  bad(new Encoder().writeUint8(1).writeUint8(MessageType.delta).writeVarUint(1).writeString('n').writeString('yjs').writeVarUint(100).finish()) // delta longer than the frame
})

test('messages: PRESENCE entries are bounded (count, ids, ttl, state) before anything is kept', () => {
  const entry = (over: Record<string, unknown> = {}) => ({ agent: 'ana', peer: 'hub', clock: 1, ttlMs: 1000, name: '', state: new Uint8Array(2), ...over })
  const decodes = (entries: unknown[]) => decodeMessage(encodeMessage({ type: 'presence', entries } as Message))
  assert.equal((decodes([entry()]) as { entries: readonly unknown[] }).entries.length, 1)
  for (const [what, entries] of [
    ['no entries', []],
    ['65 entries', Array.from({ length: 65 }, () => entry())],
    ['an empty agent', [entry({ agent: '' })]],
    ['a 257-character agent', [entry({ agent: 'a'.repeat(257) })]],
    ['an empty peer', [entry({ peer: '' })]],
    ['a ttl over 10 minutes', [entry({ ttlMs: 600_001 })]],
    ['a state over 4 KiB', [entry({ state: new Uint8Array(4097) })]],
    ['a name over 1024 characters', [entry({ name: 'n'.repeat(1025) })]],
  ] as const) {
    assert.throws(
      () => decodes([...entries]),
      (error: unknown) => isConcordError(error, ErrorCodes.DECODE_ERROR),
      what,
    )
  }
  // A count that announces more entries than the bytes can hold is refused before any is read.
  const huge = new Encoder()
    .writeUint8(FRAME_FORMAT)
    .writeUint8(MessageType.presence)
    .writeVarUint(2 ** 40)
    .finish()
  assert.throws(
    () => decodeMessage(huge),
    (error: unknown) => isConcordError(error, ErrorCodes.DECODE_ERROR),
  )
})

test('messages: unknown types decode as unknown (forward compatibility); type guards', () => {
  const future = new Encoder().writeUint8(FRAME_FORMAT).writeUint8(99).writeString('anything').writeVarUint(5).finish()
  assert.deepEqual(decodeMessage(future), { type: 'unknown', code: 99 })
  const delta = decodeMessage(encodeMessage({ type: 'delta', seq: 1, entry: { name: 'x', replicaType: 'yjs', delta: new Uint8Array([1]) } }))
  assert.ok(isCommitMessage(delta) && !isHandshakeMessage(delta))
  assert.ok(isHandshakeMessage(decodeMessage(encodeMessage({ type: 'hello-ok', version: 1 }))))
})

test('chunking: split and reassemble in any order, with duplicates', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 5000 }), fc.integer({ min: 256, max: 1024 }), fc.nat(), (payload, frameLimit, shuffleSeed) => {
      const frames = splitIntoChunks(payload, frameLimit, 3)
      for (const frame of frames) assert.ok(frame.length <= frameLimit)
      if (payload.length <= frameLimit) {
        assert.equal(frames.length, 1)
        return
      }
      const chunks = frames.map((f) => decodeMessage(f)).filter((m) => m.type === 'chunk')
      // a deterministic shuffle plus a duplicate
      const order = chunks
        .map((c, i) => ({ c, k: (i * 7919 + shuffleSeed) % 1013 }))
        .sort((x, y) => x.k - y.k)
        .map((x) => x.c)
      order.splice(1, 0, order[0])
      const reassembler = new Reassembler()
      const results = order.map((c) => reassembler.add(c)).filter((r) => r !== null)
      assert.equal(results.length, 1)
      assert.deepEqual(results[0], payload)
    }),
    { seed: 3, numRuns: 100 },
  )
})

test('chunking: limits are enforced', () => {
  const reassembler = new Reassembler({ maxMessageBytes: 1000, maxPartial: 2 })
  const chunk = (id: number, index: number, count: number, totalBytes: number, length: number) => ({
    type: 'chunk' as const,
    id,
    index,
    count,
    totalBytes,
    bytes: new Uint8Array(length),
  })
  assert.throws(
    () => reassembler.add(chunk(1, 0, 2, 5000, 10)),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  assert.equal(reassembler.add(chunk(2, 0, 2, 100, 50)), null)
  assert.throws(
    () => reassembler.add(chunk(2, 1, 3, 100, 50)),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  ) // inconsistent count
  assert.equal(reassembler.add(chunk(3, 0, 2, 100, 60)), null)
  assert.throws(
    () => reassembler.add(chunk(3, 1, 2, 100, 60)),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  ) // parts exceed total
  // only maxPartial partial messages are held
  reassembler.add(chunk(4, 0, 2, 10, 5))
  reassembler.add(chunk(5, 0, 2, 10, 5))
  reassembler.add(chunk(6, 0, 2, 10, 5))
  assert.ok(reassembler.evicted >= 1)
  assert.ok(reassembler.pendingBytes <= 20)
})

test('names: filters by exact name and prefix', () => {
  assert.ok(matchesFilter({}, 'anything'))
  const filter = { names: ['a'], prefixes: ['p/'] }
  assert.ok(matchesFilter(filter, 'a'))
  assert.ok(matchesFilter(filter, 'p/x'))
  assert.ok(!matchesFilter(filter, 'ab'))
  assert.ok(!matchesFilter(filter, 'p'))
  assert.ok(!matchesFilter({ names: [], prefixes: [] }, 'a'))
})

test('PROVENANCE with signatures (flag bit 3): round-trips; a count the bytes cannot hold, an unknown form or a short signature is a decode error', () => {
  const signature = new Uint8Array(64).fill(7)
  const publicKey = new Uint8Array(32).fill(9)
  const message = {
    type: 'provenance' as const,
    seq: 3,
    agent: 'A',
    message: 'why',
    metaJson: undefined,
    authored: { wall: 5, logical: 1 },
    signatures: [{ signature }, undefined, { signature, publicKey }],
  }
  assert.deepEqual(decodeMessage(encodeMessage(message)), message)
  const plain = encodeMessage({ type: 'provenance', seq: 3, agent: 'A' })
  // seq 3, agent 'A', flags 8, then the list.
  const head = [...plain.subarray(0, plain.length - 1), 8]
  for (const tail of [
    [200, 1],
    [1, 2],
    [1, 1, 1, 2, 3],
  ]) {
    assert.throws(
      () => decodeMessage(Uint8Array.from([...head, ...tail])),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
      `tail ${tail}`,
    )
  }
})
