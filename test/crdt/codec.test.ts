import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Decoder, Encoder, decodeGuarded } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { HybridClock, compareHlc, readHlc, writeHlc } from '../../crdt/hlc.ts'

test('codec: values round-trip', () => {
  fc.assert(fc.property(
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
  ), { seed: 42 })
})

test('codec: truncated and hostile input gives CONCORD_DECODE_ERROR', () => {
  const bytes = new Encoder().writeString('hello').writeVarUint(2 ** 40).finish()
  for (let cut = 0; cut < bytes.length; cut++) {
    assert.throws(() => decodeGuarded('t', bytes.subarray(0, cut), (d) => { d.readString(); d.readVarUint() }),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR))
  }
  // a count that claims more items than bytes remain
  const hostile = new Encoder().writeVarUint(1_000_000_000).finish()
  assert.throws(() => decodeGuarded('t', hostile, (d) => d.readCount(1)), (e) => isConcordError(e, ErrorCodes.DECODE_ERROR))
  // trailing bytes
  assert.throws(() => decodeGuarded('t', new Uint8Array([1, 2]), (d) => d.readUint8()), (e) => isConcordError(e, ErrorCodes.DECODE_ERROR))
  // invalid UTF-8
  assert.throws(() => decodeGuarded('t', new Uint8Array([2, 0xff, 0xfe]), (d) => d.readString()), (e) => isConcordError(e, ErrorCodes.DECODE_ERROR))
  // overlong varuint
  assert.throws(() => decodeGuarded('t', new Uint8Array([0x80, 0x00]), (d) => d.readVarUint()), (e) => isConcordError(e, ErrorCodes.DECODE_ERROR))
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
  const enc = new Encoder(); writeHlc(enc, c)
  assert.deepEqual(readHlc(new Decoder(enc.finish())), c)
})
