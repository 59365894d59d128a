/**
 * The libp2p transport's pure parts: frame codec (any chunking, hostile
 * prefixes), key file codec and key file on disk, allowlist parsing.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { FrameDecoder, MAX_PREFIX_BYTES, encodeFrame, prefixLength } from '../../transports/libp2p/frame-codec.ts'
import { KEY_FILE_NAME, decodeKeyFile, encodeKeyFile, loadOrCreatePrivateKey } from '../../transports/libp2p/key-file.ts'
import { createAllowlist } from '../../transports/libp2p/allowlist-gater.ts'
import { concatBytes } from '../helpers/bytes.ts'

/** Splits `bytes` at the given cut points. */
function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const chunks: Uint8Array[] = []
  let start = 0
  for (const point of points) {
    chunks.push(bytes.subarray(start, point))
    start = point
  }
  chunks.push(bytes.subarray(start))
  return chunks
}

test('frame codec: frames survive any chunking, in order, including empty frames', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 600 }), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 30 }), (frames, cuts) => {
      const wire = concatBytes(frames.map((f) => encodeFrame(f, 1000)))
      const decoder = new FrameDecoder(1000)
      const out: Uint8Array[] = []
      for (const chunk of split(wire, cuts)) out.push(...decoder.push(chunk))
      assert.deepEqual(out, frames)
      assert.equal(decoder.midFrame, false)
    }),
    { seed: 6_001, numRuns: 300 },
  )
})

test('frame codec: a decoded frame does not alias the chunk it came from', () => {
  const wire = encodeFrame(new Uint8Array([1, 2, 3]), 10)
  const [frame] = new FrameDecoder(10).push(wire)
  wire.fill(0)
  assert.deepEqual([...frame], [1, 2, 3])
})

test('frame codec: prefix lengths match LEB128', () => {
  for (const [n, bytes] of [
    [0, 1],
    [127, 1],
    [128, 2],
    [16_383, 2],
    [16_384, 3],
    [2 ** 28, 5],
  ] as const) {
    assert.equal(prefixLength(n), bytes)
  }
  assert.deepEqual([...encodeFrame(new Uint8Array(300), 1000).subarray(0, 2)], [0xac, 0x02])
})

test('frame codec: hostile prefixes fail fast with CONCORD_DECODE_ERROR and stay failed', () => {
  const isDecodeError = (e: unknown) => isConcordError(e, ErrorCodes.DECODE_ERROR)
  // a length over the limit is refused before any body byte arrives
  const over = new FrameDecoder(100)
  assert.throws(() => over.push(new Uint8Array([101])), isDecodeError)
  assert.throws(() => over.push(new Uint8Array([1, 0])), isDecodeError, 'a failed decoder stays failed')
  // ... even while the prefix is still incomplete (the partial value is already too big)
  assert.throws(() => new FrameDecoder(100).push(new Uint8Array([0xff, 0xff])), isDecodeError)
  // a prefix longer than 5 bytes (an endless varint) is refused
  const endless = new FrameDecoder(2 ** 34)
  assert.throws(() => endless.push(new Uint8Array(MAX_PREFIX_BYTES).fill(0x80)), isDecodeError)
  // property: any prefix byte string either decodes to a length <= limit or throws; never hangs or over-allocates
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 12 }), fc.nat({ max: 5000 }), (bytes, limit) => {
      const decoder = new FrameDecoder(limit)
      try {
        decoder.push(bytes)
      } catch (error) {
        assert.ok(isDecodeError(error))
      }
    }),
    { seed: 6_002, numRuns: 500 },
  )
})

test('frame codec: encodeFrame refuses an over-limit frame with CONCORD_LIMIT_EXCEEDED; bad limits are refused', () => {
  assert.throws(
    () => encodeFrame(new Uint8Array(11), 10),
    (e) => isConcordError(e, ErrorCodes.LIMIT_EXCEEDED),
  )
  assert.throws(
    () => new FrameDecoder(-1),
    (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
  )
  assert.throws(
    () => new FrameDecoder(2 ** 40),
    (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
  )
})

test('key file codec: round-trips; bad bytes give typed errors', async () => {
  const key = await generateKeyPair('Ed25519')
  const bytes = encodeKeyFile(key)
  assert.equal(bytes[0], 1)
  assert.ok(decodeKeyFile(bytes).equals(key))
  assert.throws(
    () => decodeKeyFile(new Uint8Array(0)),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  assert.throws(
    () => decodeKeyFile(Uint8Array.of(0, ...bytes.subarray(1))),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
  assert.throws(
    () => decodeKeyFile(Uint8Array.of(2, ...bytes.subarray(1))),
    (e) => isConcordError(e, ErrorCodes.UNSUPPORTED_VERSION),
  )
  for (let cut = 1; cut < bytes.length; cut += 7) {
    assert.throws(
      () => decodeKeyFile(bytes.subarray(0, cut)),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
    )
  }
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 80 }), (junk) => {
      try {
        decodeKeyFile(Uint8Array.of(1, ...junk))
      } catch (error) {
        assert.ok(isConcordError(error, ErrorCodes.DECODE_ERROR))
      }
    }),
    { seed: 6_003, numRuns: 200 },
  )
})

test('key file: created once with mode 0600, loaded again with the same PeerId; a corrupt file is refused, not replaced', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'concord-libp2p-key-'))
  try {
    const nested = join(dir, 'peer', 'data')
    const first = await loadOrCreatePrivateKey(nested)
    const info = await stat(join(nested, KEY_FILE_NAME))
    assert.equal(info.mode & 0o777, 0o600)
    const second = await loadOrCreatePrivateKey(nested)
    assert.equal(peerIdFromPrivateKey(second).toString(), peerIdFromPrivateKey(first).toString())
    // concurrent first use in another folder: everyone ends with the same key
    const racy = join(dir, 'racy')
    const keys = await Promise.all([1, 2, 3, 4].map(() => loadOrCreatePrivateKey(racy)))
    const ids = new Set(keys.map((k) => peerIdFromPrivateKey(k).toString()))
    const onDisk = decodeKeyFile(await readFile(join(racy, KEY_FILE_NAME)))
    assert.deepEqual([...ids], [peerIdFromPrivateKey(onDisk).toString()])
    // corrupt: typed error, file left as it was
    const path = join(nested, KEY_FILE_NAME)
    await writeFile(path, Uint8Array.of(1, 9, 9, 9))
    await assert.rejects(loadOrCreatePrivateKey(nested), (e) => isConcordError(e, ErrorCodes.DECODE_ERROR))
    assert.deepEqual([...(await readFile(path))], [1, 9, 9, 9])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

test('allowlist: PeerIds are validated', async () => {
  const id = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
  assert.deepEqual([...createAllowlist([id])], [id])
  assert.throws(
    () => createAllowlist(['not-a-peer-id']),
    (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
  )
})
