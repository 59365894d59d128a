/**
 * Whether a batch of Automerge changes extends a document linearly: the
 * first change depends on every head of the document and each further
 * change on the one before it, so nothing in the batch is concurrent with
 * the document or with the rest of the batch (one agent's run of edits
 * arriving at a peer that is up to date: the common live case).
 *
 * Automerge 3.5.0 computes the patches for its JS view wrongly for some
 * batches with concurrency (see `applyDelta` in automerge-replica.ts); a
 * linear batch's patches are those of applying its changes one by one, so
 * the replica keeps them and rebuilds the view only for other batches.
 *
 * Reads only the dependency list at the start of each change's payload
 * (LEB128 count, then 32-byte hashes; the Automerge binary format). Any
 * surprise gives `false` (the safe answer: the view is rebuilt).
 */
import { hexOf } from './automerge-clock.ts'
import { readUleb, type AutomergeChunk } from './automerge-guard.ts'

const HASH_BYTES = 32

/** The dependency hashes of a change chunk (views into its bytes), or null when they cannot be read. */
export function dependencies(chunk: AutomergeChunk): Uint8Array[] | null {
  const bytes = chunk.bytes
  const read = readUleb(bytes, chunk.payloadOffset, 5)
  if (read === undefined) return null
  const count = read[0]
  let pos = read[1]
  if (count * HASH_BYTES > bytes.length - pos) return null
  const deps: Uint8Array[] = []
  for (let i = 0; i < count; i++, pos += HASH_BYTES) deps.push(bytes.subarray(pos, pos + HASH_BYTES))
  return deps
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * True when `changes` (change chunks, in the order given) extend a document
 * whose heads are `heads` (hex) linearly; see the module comment.
 */
export function extendsLinearly(changes: readonly AutomergeChunk[], heads: readonly string[]): boolean {
  if (changes.length === 0) return true
  const first = dependencies(changes[0])
  if (first === null) return false
  const firstDeps = new Set(first.map((hash) => hexOf(hash)))
  for (const head of heads) if (!firstDeps.has(head)) return false
  for (let i = 1; i < changes.length; i++) {
    const previous = changes[i - 1].hash
    const deps = dependencies(changes[i])
    if (previous === undefined || deps === null || !deps.some((dep) => sameBytes(dep, previous))) return false
  }
  return true
}
