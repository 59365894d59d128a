/**
 * The seal file's list in chunks (persistence/format/seal.ts): a patch of
 * the chunks gives the list a model gives (names created before, between
 * and after the chunks, changed, removed; chunks split past twice their
 * size, emptied ones dropped) and leaves every chunk without an update as
 * it was; a file whose chunks claim more than they can hold, or do not
 * decode as they say, is refused with a typed error before anything large
 * is allocated.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import fc from 'fast-check'
import { Encoder } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { sealWithChecksum } from '../../persistence/format/checksum.ts'
import {
  decodeSealFile,
  encodeSealFile,
  packChunks,
  patchChunks,
  SEAL_CHUNK_NAMES,
  type SealEntry,
  sealEntries,
  sortEntries,
  unpackChunk,
} from '../../persistence/format/seal.ts'

const header = { agentId: 'a', generation: 1, closedAt: 2 }
const named = (i: number): string => `n${String(i).padStart(5, '0')}`

it('a patch of the chunks lists what the model lists, and keeps the chunks it does not touch', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: 0, max: 400 }), { maxLength: 200 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 420 }), fc.option(fc.integer({ min: 1, max: 99 }), { nil: undefined })), { maxLength: 40 }),
      fc.integer({ min: 1, max: 40 }),
      (held, updates, size) => {
        const entries = sortEntries(held.map((i) => ({ name: named(i), lastSeq: i + 1 })))
        const chunks = packChunks(entries, size)
        const patch = new Map(updates.map(([i, lastSeq]) => [named(i), lastSeq]))
        const model = new Map(entries.map((entry) => [entry.name, entry.lastSeq]))
        for (const [name, lastSeq] of patch) {
          if (lastSeq === undefined) model.delete(name)
          else model.set(name, lastSeq)
        }
        const patched = patchChunks(chunks, patch)
        const expected: SealEntry[] = sortEntries([...model].map(([name, lastSeq]) => ({ name, lastSeq })))
        // Through the file's bytes, as a close writes it and the next reads it.
        assert.deepEqual(sealEntries(decodeSealFile(encodeSealFile({ ...header, chunks: patched }))), expected)
        for (const chunk of patched) assert.ok(chunk.count > 0 && chunk.count <= Math.max(size, 2 * SEAL_CHUNK_NAMES))
        // A chunk no update falls in is the same object: not inflated, not written again.
        const touched = new Set<number>()
        for (const name of patch.keys()) {
          let at = 0
          for (let i = 0; i < chunks.length; i++) if (chunks[i].first <= name) at = i
          touched.add(at)
        }
        for (const [i, chunk] of chunks.entries()) if (!touched.has(i)) assert.ok(patched.includes(chunk), `chunk ${i} kept`)
      },
    ),
    { seed: 1919, numRuns: 300 },
  )
})

it('a chunk patched past twice its size is split; one emptied is dropped', () => {
  const entries = Array.from({ length: SEAL_CHUNK_NAMES }, (_, i) => ({ name: named(2 * i), lastSeq: 1 }))
  const [chunk] = packChunks(entries)
  const grown = patchChunks([chunk], new Map(Array.from({ length: SEAL_CHUNK_NAMES + 10 }, (_, i) => [named(2 * i + 1), 2])))
  assert.deepEqual(
    grown.map((c) => c.count),
    [SEAL_CHUNK_NAMES, SEAL_CHUNK_NAMES, 10],
  )
  assert.equal(sealEntries({ ...header, chunks: grown }).length, 2 * SEAL_CHUNK_NAMES + 10)
  assert.deepEqual(patchChunks([chunk], new Map(entries.map((e) => [e.name, undefined]))), [])
  assert.deepEqual(sealEntries({ ...header, chunks: patchChunks([], new Map([['x', 4]])) }), [{ name: 'x', lastSeq: 4 }])
})

/** A version 2 file with one chunk as given (its checksum right). */
function fileWith(first: string, count: number, rawBytes: number, packed: Uint8Array): Uint8Array {
  const e = new Encoder().writeUint8(2).writeString('a').writeVarUint(1).writeVarUint(2).writeVarUint(1)
  e.writeString(first).writeVarUint(count).writeVarUint(rawBytes).writeBytes(packed)
  return sealWithChecksum(e.finish())
}

const corrupt = (error: unknown): boolean => isConcordError(error, ErrorCodes.CORRUPT_RECORD)

it('a file whose chunks claim more than they hold, or do not decode as they say, is refused with CONCORD_CORRUPT_RECORD', () => {
  const [chunk] = packChunks([
    { name: 'a', lastSeq: 1 },
    { name: 'b', lastSeq: 2 },
  ])
  assert.deepEqual(sealEntries(decodeSealFile(fileWith('a', 2, chunk.rawBytes, chunk.packed))).length, 2)
  // Claims: too many names, more bytes than its names can take (a bomb would be inflated into them), no names.
  assert.throws(() => decodeSealFile(fileWith('a', 2 * SEAL_CHUNK_NAMES + 1, 1 << 20, chunk.packed)), corrupt)
  assert.throws(() => decodeSealFile(fileWith('a', 2, 1 << 30, chunk.packed)), corrupt)
  assert.throws(() => decodeSealFile(fileWith('a', 0, 0, chunk.packed)), corrupt)
  // Decodes otherwise than it says: the size, the count, the first name, the order; bytes that do not inflate.
  assert.throws(() => sealEntries(decodeSealFile(fileWith('a', 2, chunk.rawBytes + 1, chunk.packed))), corrupt)
  assert.throws(() => sealEntries(decodeSealFile(fileWith('a', 1, chunk.rawBytes, chunk.packed))), corrupt)
  assert.throws(() => sealEntries(decodeSealFile(fileWith('b', 2, chunk.rawBytes, chunk.packed))), corrupt)
  const [backwards] = packChunks([
    { name: 'b', lastSeq: 1 },
    { name: 'a', lastSeq: 2 },
  ])
  assert.throws(() => unpackChunk(backwards), corrupt)
  assert.throws(() => sealEntries(decodeSealFile(fileWith('a', 2, chunk.rawBytes, Uint8Array.of(0xff, 0xff, 0xff)))), corrupt)
  // A flipped byte: the checksum.
  const bytes = fileWith('a', 2, chunk.rawBytes, chunk.packed)
  bytes[bytes.length - 8] ^= 1
  assert.throws(() => decodeSealFile(bytes), corrupt)
  // A newer version is not read.
  assert.throws(
    () => decodeSealFile(sealWithChecksum(Uint8Array.of(3, 0))),
    (error) => isConcordError(error, ErrorCodes.UNSUPPORTED_VERSION),
  )
})
