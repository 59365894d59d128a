/**
 * The browser's digests (persistence/browser/digest.ts, which a browser
 * bundle takes in place of persistence/format/digest.ts) give the same bytes as
 * Node's native ones: a store written in one is read in the other, and
 * record hashes chain the same on every peer.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import * as node from '../../persistence/format/digest.ts'
import * as browser from '../../persistence/browser/digest.ts'

test('SHA-256 and CRC-32 agree between the Node and the browser modules', () => {
  const abc = new TextEncoder().encode('abc')
  assert.equal(Buffer.from(browser.sha256(abc)).toString('hex'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  assert.equal(browser.checksum(abc), 0x352441c2)
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
      assert.deepEqual([...browser.sha256(bytes)], [...node.sha256(bytes)])
      assert.equal(browser.checksum(bytes), node.checksum(bytes))
    }),
    { seed: 18, numRuns: 300 },
  )
  const large = new Uint8Array(1 << 20).map((_, i) => (i * 31) & 0xff)
  assert.deepEqual([...browser.sha256(large)], [...node.sha256(large)])
  assert.equal(browser.checksum(large), node.checksum(large))
})
