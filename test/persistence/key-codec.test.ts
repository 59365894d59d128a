/**
 * The LevelDB key codec (persistence/storage/level/key-codec.ts): any key
 * of well-formed strings decodes to itself, by the fast path (no escape,
 * short ASCII segments read char by char, others by the TextDecoder) and
 * by the escaped one, and the byte order is the segment order.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { compareBytes, decodeKey, encodeKey } from '../../persistence/storage/level/key-codec.ts'

const wellFormed = (text: string): boolean => !/[\ud800-\udfff]/.test(text.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))
const segment = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom('', '\u0000', '\u0001', 'a\u0000b', '\u007f', '\u0080', 'é', '😀', 'x'.repeat(64), 'x'.repeat(65), `${'y'.repeat(70)}é`),
)
const key = fc.array(segment, { minLength: 1, maxLength: 4 }).filter((segments) => segments.every(wellFormed))

test('a key decodes to itself', () => {
  fc.assert(
    fc.property(key, (segments) => {
      assert.deepEqual(decodeKey(encodeKey(segments)), segments)
    }),
    { numRuns: 2000 },
  )
})

test('byte order is segment order', () => {
  const order = (a: readonly string[], b: readonly string[]): number => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const x = Buffer.from(a[i], 'utf8')
      const y = Buffer.from(b[i], 'utf8')
      const c = Buffer.compare(x, y)
      if (c !== 0) return c
    }
    return a.length - b.length
  }
  fc.assert(
    fc.property(key, key, (a, b) => {
      assert.equal(Math.sign(compareBytes(encodeKey(a), encodeKey(b))), Math.sign(order(a, b)))
    }),
    { numRuns: 2000 },
  )
})

test('malformed bytes are refused with CONCORD_DECODE_ERROR: a bad escape, an unterminated segment, invalid UTF-8', () => {
  const refused = (bytes: Uint8Array, why: RegExp) =>
    assert.throws(
      () => decodeKey(bytes),
      (error) => isConcordError(error, ErrorCodes.DECODE_ERROR) && why.test(error.message),
    )
  refused(Uint8Array.of(0x61, 0x01, 0x07, 0x00), /bad escape/)
  refused(Uint8Array.of(0x61, 0x62), /unterminated/)
  refused(Uint8Array.of(0x61, 0x00, 0x62), /unterminated/)
  // Not UTF-8, on the fast path and on the escaped one (a TypeError from the TextDecoder before; found by the fuzzer).
  refused(Uint8Array.of(0xc3, 0x00), /not UTF-8/)
  refused(Uint8Array.of(0xff, 0xfe, 0x00), /not UTF-8/)
  refused(Uint8Array.of(0x61, 0x01, 0x01, 0xc3, 0x00), /not UTF-8/)
  assert.deepEqual(decodeKey(new Uint8Array(0)), [])
})
