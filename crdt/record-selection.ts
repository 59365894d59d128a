/**
 * Which logged changes a remote lacks, told by its version: what lets an
 * anti-entropy answer be made of the changes themselves (with their
 * author, message and signature) instead of merged state
 * (sync/PROTOCOL.md "Answers made of records").
 *
 * A {@link RecordSelector} answers two questions about a name, for one
 * remote version `since` and `lack` (the delta a replica at `since` lacks,
 * `deltaSince(since)`):
 * - `lacks(delta)`: whether a replica at `since` lacks something of one
 *   logged delta (`true`), holds all of it (`false`: the remote got at
 *   least that far), or the version cannot tell (`'unknown'`: a Yjs update
 *   that only deletes, since a state vector records no deletions);
 * - `covers(deltas)`: whether those deltas together bring all of `lack`,
 *   and what of `lack` must still go as merged state (`residual`: a Yjs
 *   document's delete set, which no version lets one select).
 * `covers` is exact (never true when something of `lack` would be
 * missing); `lacks` only chooses what to try.
 *
 * Native types: a scratch replica holding the delta (or deltas) is asked
 * (`deltaSince(since)` for `lacks`; `applyDelta(lack)` changes nothing for
 * `covers`). Yjs: the structs' ids against the state vector. Automerge:
 * change hashes (a change is named by its hash; `lack` holds exactly the
 * changes the remote lacks, so a delta lacks something when it holds one of
 * them, and a run covers when it holds them all).
 */
import * as A from '@automerge/automerge/slim'
import * as Y from 'yjs'
import { AutomergeChunkType, splitAutomergeChunks } from './documents/automerge-guard.ts'
import { ensureAutomerge } from './documents/automerge-runtime.ts'
import { changeHashes } from './documents/automerge-waiting.ts'
import { DEFAULT_DOCUMENT_LIMITS } from './documents/options.ts'
import type { Replica, ReplicaType } from './replica.ts'
import { nativeTypes } from './types/native-type.ts'

/** See the module comment. */
export interface RecordSelector {
  lacks(delta: Uint8Array): boolean | 'unknown'
  covers(deltas: readonly Uint8Array[]): { readonly covered: boolean; readonly residual?: Uint8Array | undefined }
}

/** Whether the records of `type` can be selected by version ({@link recordSelector} gives a selector). */
export function selectsRecords(type: ReplicaType): boolean {
  return nativeTypes.get(type) !== undefined || type === 'yjs' || type === 'automerge'
}

/**
 * The selector of `type` for a remote at `since` that lacks `lack`, or
 * undefined for a type whose records cannot be selected by version.
 * `scratch` makes an empty replica of the type.
 */
export function recordSelector(type: ReplicaType, since: Uint8Array, lack: Uint8Array, scratch: () => Replica): RecordSelector | undefined {
  if (nativeTypes.get(type)) return nativeSelector(since, lack, scratch)
  if (type === 'yjs') return yjsSelector(since, lack)
  if (type === 'automerge') return automergeSelector(lack)
  return undefined
}

/**
 * The hashes of the changes in Automerge bytes (change chunks, and the
 * changes a document chunk holds), or undefined when they cannot be read.
 */
function automergeHashes(bytes: Uint8Array): Set<string> | undefined {
  try {
    const chunks = splitAutomergeChunks(bytes, { ...DEFAULT_DOCUMENT_LIMITS, maxBytes: Number.MAX_SAFE_INTEGER })
    const hashes = new Set(changeHashes(chunks))
    if (chunks.some((chunk) => chunk.type === AutomergeChunkType.document)) ensureAutomerge()
    for (const chunk of chunks) {
      if (chunk.type === AutomergeChunkType.document) for (const change of A.getAllChanges(A.load(chunk.bytes))) hashes.add(A.decodeChange(change).hash)
    }
    return hashes
  } catch {
    return undefined
  }
}

function automergeSelector(lack: Uint8Array): RecordSelector | undefined {
  const needed = automergeHashes(lack)
  if (!needed) return undefined
  // A delta is asked about by `lacks` and again by each `covers` of a growing run: its hashes are read once.
  const read = new WeakMap<Uint8Array, Set<string> | undefined>()
  const hashesOf = (delta: Uint8Array): Set<string> | undefined => {
    if (!read.has(delta)) read.set(delta, automergeHashes(delta))
    return read.get(delta)
  }
  return {
    lacks(delta) {
      const hashes = hashesOf(delta)
      if (!hashes) return 'unknown'
      for (const hash of hashes) if (needed.has(hash)) return true
      return false
    },
    covers(deltas) {
      const have = new Set<string>()
      for (const delta of deltas) for (const hash of hashesOf(delta) ?? []) have.add(hash)
      for (const hash of needed) if (!have.has(hash)) return { covered: false }
      return { covered: true }
    },
  }
}

function nativeSelector(since: Uint8Array, lack: Uint8Array, scratch: () => Replica): RecordSelector {
  return {
    lacks(delta) {
      const replica = scratch()
      replica.applyDelta(delta)
      return replica.deltaSince(since) !== null
    },
    covers(deltas) {
      const replica = scratch()
      for (const delta of deltas) replica.applyDelta(delta)
      return { covered: !replica.applyDelta(lack) }
    },
  }
}

/** Per client, the clock ranges `[from, to)` of an update's structs (skips left out). */
function structRanges(update: Uint8Array): Map<number, Array<[number, number]>> {
  const ranges = new Map<number, Array<[number, number]>>()
  for (const struct of Y.decodeUpdate(update).structs) {
    if (struct instanceof Y.Skip) continue
    const { client, clock } = struct.id
    let list = ranges.get(client)
    if (!list) ranges.set(client, (list = []))
    list.push([clock, clock + struct.length])
  }
  return ranges
}

function hasDeletions(update: Uint8Array): boolean {
  return Y.decodeUpdate(update).ds.clients.size > 0
}

function yjsSelector(since: Uint8Array, lack: Uint8Array): RecordSelector {
  const known = Y.decodeStateVector(since)
  const needed = structRanges(lack)
  // Each `covers` of a growing run reads its deltas again: their ranges are decoded once.
  const decoded = new WeakMap<Uint8Array, Map<number, Array<[number, number]>>>()
  const rangesOf = (delta: Uint8Array) => {
    let ranges = decoded.get(delta)
    if (!ranges) decoded.set(delta, (ranges = structRanges(delta)))
    return ranges
  }
  return {
    lacks(delta) {
      const { to } = Y.parseUpdateMeta(delta)
      for (const [client, clock] of to) if (clock > (known.get(client) ?? 0)) return true
      return hasDeletions(delta) ? 'unknown' : false
    },
    covers(deltas) {
      const have = new Map<number, Array<[number, number]>>()
      for (const delta of deltas) {
        for (const [client, list] of rangesOf(delta)) {
          const into = have.get(client)
          if (into) into.push(...list)
          else have.set(client, [...list])
        }
      }
      for (const [client, list] of needed) {
        const held = (have.get(client) ?? []).sort((a, b) => a[0] - b[0])
        for (const [from, to] of list) if (!within(held, from, to)) return { covered: false }
      }
      // The delete set: every deletion of the document, which no version selects; a remote that has them takes it as no change.
      const clocks = new Map<number, number>()
      for (const [client, list] of needed) clocks.set(client, Math.max(...list.map(([, to]) => to)))
      const residual = Y.diffUpdate(lack, Y.encodeStateVector(clocks))
      return { covered: true, residual: residual.length === 2 && residual[0] === 0 && residual[1] === 0 ? undefined : residual }
    },
  }
}

/** Whether `[from, to)` lies within the union of `held` (sorted by start). */
function within(held: ReadonlyArray<readonly [number, number]>, from: number, to: number): boolean {
  let reach = from
  for (const [start, end] of held) {
    if (start > reach) break
    if (end > reach) reach = end
    if (reach >= to) return true
  }
  return reach >= to
}
