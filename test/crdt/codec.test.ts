import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Decoder, Encoder, decodeGuarded } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { HybridClock, compareHlc, readHlc, writeHlc } from '../../crdt/hlc.ts'

test('codec: writeString writes the bytes TextEncoder gives, ASCII (written in place) or not', () => {
  const utf8 = new TextEncoder()
  const expected = (s: string) => new Encoder().writeBytes(utf8.encode(s)).finish()
  for (const s of ['', 'task/0000001', '\x7f', '\x80', 'caf\u00e9', 'x\uD800', '\uDC00y', '\u{1F600}', 'a'.repeat(300)]) {
    assert.deepEqual(new Encoder(4).writeString(s).finish(), expected(s), JSON.stringify(s))
  }
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-ascii' })), (s) => {
      assert.deepEqual(new Encoder(1).writeUint8(7).writeString(s).finish(), Uint8Array.of(7, ...expected(s)))
    }),
    { seed: 7 },
  )
})

test('codec: values round-trip', () => {
  fc.assert(
    fc.property(
      fc.nat({ max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: -(2 ** 52), max: 2 ** 52 }),
      fc.double({ noNaN: true }),
      fc.string(),
      fc.uint8Array(),
      (u, i, f, s, b) => {
        const bytes = new Encoder().writeVarUint(u).writeVarInt(i).writeFloat64(f).writeString(s).writeBytes(b).finish()
        const d = new Decoder(bytes)
        assert.equal(d.readVarUint(), u)
        assert.equal(d.readVarInt(), i)
        assert.ok(Object.is(d.readFloat64(), f))
        assert.equal(d.readString(), s)
        assert.deepEqual(d.readBytes(), b)
        d.end('test')
      },
    ),
    { seed: 42 },
  )
})

test('codec: truncated and hostile input gives CONCORD_DECODE_ERROR', () => {
  const bytes = new Encoder()
    .writeString('hello')
    .writeVarUint(2 ** 40)
    .finish()
  for (let cut = 0; cut < bytes.length; cut++) {
    assert.throws(
      () =>
        decodeGuarded('t', bytes.subarray(0, cut), (d) => {
          d.readString()
          d.readVarUint()
        }),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
    )
  }
  // a count that claims more items than bytes remain
  const hostile = new Encoder().writeVarUint(1_000_000_000).finish()
  assert.throws(
    () => decodeGuarded('t', hostile, (d) => d.readCount(1)),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  // trailing bytes
  assert.throws(
    () => decodeGuarded('t', new Uint8Array([1, 2]), (d) => d.readUint8()),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  // invalid UTF-8
  assert.throws(
    () => decodeGuarded('t', new Uint8Array([2, 0xff, 0xfe]), (d) => d.readString()),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  // overlong varuint
  assert.throws(
    () => decodeGuarded('t', new Uint8Array([0x80, 0x00]), (d) => d.readVarUint()),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
})

test('hlc: monotonic under a clock that goes backwards, and observes remote time', () => {
  let now = 1000
  const clock = new HybridClock(() => now)
  const a = clock.now()
  now = 900
  const b = clock.now()
  assert.ok(compareHlc(b, a) > 0)
  clock.observe({ wall: 5000, logical: 3 })
  const c = clock.now()
  assert.deepEqual(c, { wall: 5000, logical: 4 })
  const enc = new Encoder()
  writeHlc(enc, c)
  assert.deepEqual(readHlc(new Decoder(enc.finish())), c)
})

test('codec: a length is checked against its limit before the bytes are read or decoded', () => {
  const bytes = new Encoder().writeString('x'.repeat(5000)).finish()
  assert.throws(
    () => new Decoder(bytes).readString(4096),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR) && /over the limit of 4096/.test((e as Error).message),
  )
  assert.equal(new Decoder(bytes).readString(5000).length, 5000)
  assert.throws(
    () => new Decoder(new Encoder().writeBytes(new Uint8Array(10)).finish()).readBytes(9),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  assert.throws(() => new Decoder(new Uint8Array([1])).readCount(0), RangeError)
})

test('json: a value nested deeper than the limit is refused before JSON.parse builds it (a set element of 8M levels)', async () => {
  const { parseCanonicalJson, MAX_JSON_DEPTH, canonicalJson } = await import('../../crdt/types/json.ts')
  let deepest: unknown = 1
  for (let i = 0; i < MAX_JSON_DEPTH; i++) deepest = [deepest]
  assert.deepEqual(parseCanonicalJson(canonicalJson(deepest)), deepest, 'the limit itself is fine')
  assert.equal(
    parseCanonicalJson('"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\\"'),
    '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\',
    'brackets inside a string do not count',
  )
  const depth = 8 * 1024 * 1024
  const before = process.memoryUsage().heapUsed
  assert.throws(
    () => parseCanonicalJson(`${'['.repeat(depth)}${']'.repeat(depth)}`),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR) && /deeper than 64/.test((e as Error).message),
  )
  const grown = (process.memoryUsage().heapUsed - before) / 2 ** 20
  // The text itself is 16 MiB; JSON.parse of it built 8M arrays (hundreds of MiB, out of memory in a small heap).
  assert.ok(grown < 64, `heap grew by ${grown.toFixed(0)} MiB`)
})
