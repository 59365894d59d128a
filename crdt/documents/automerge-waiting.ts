/**
 * What a batch of Automerge change chunks needs before it can apply: the
 * dependency hashes that are neither in the document nor among the batch's
 * own changes. Such a batch waits outside Automerge (waiting-room.ts), keyed
 * by each missing hash (threshold 1: known), instead of in Automerge's own
 * queue of changes with missing dependencies.
 */
import * as A from '@automerge/automerge/slim'
import { hexOf } from './automerge-clock.ts'
import type { AutomergeChunk } from './automerge-guard.ts'
import { dependencies } from './automerge-linear.ts'

/** The hex hashes of change chunks (the guard computed them). */
export function changeHashes(chunks: readonly AutomergeChunk[]): string[] {
  const hashes: string[] = []
  for (const chunk of chunks) if (chunk.hash !== undefined) hashes.push(hexOf(chunk.hash))
  return hashes
}

/**
 * The dependencies of `changes` that `doc` lacks and the batch does not
 * bring (hex), or `undefined` when it can apply now. `heads` are the
 * document's heads (the common live case: the only dependency is a head,
 * known without asking Automerge); `own` the batch's own hashes.
 */
export function missingDependencies(
  doc: A.Doc<unknown>,
  heads: readonly string[],
  changes: readonly AutomergeChunk[],
  own: readonly string[],
): string[] | undefined {
  let missing: string[] | undefined
  let ownSet: Set<string> | undefined
  for (const chunk of changes) {
    const deps = dependencies(chunk)
    if (deps === null) continue // unreadable: Automerge's parser decides
    for (const dep of deps) {
      const hash = hexOf(dep)
      if (heads.includes(hash)) continue
      if ((ownSet ??= new Set(own)).has(hash)) continue
      if (missing?.includes(hash)) continue
      if (A.hasHeads(doc, [hash])) continue
      ;(missing ??= []).push(hash)
    }
  }
  return missing
}
