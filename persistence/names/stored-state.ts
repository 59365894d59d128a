/**
 * What a remote lacks of a stored name, read from storage without
 * hydrating it (issue 15: a first sync into an empty peer, or a remote far
 * behind): the name's checkpoint and the log after it (read as hydration
 * reads them: one scan per kind for names read in key order,
 * names/read-ahead.ts) are rebuilt into a detached replica (names/replay.ts,
 * every record checked as hydration checks it), which is not put in the
 * cache, and the delta is taken from it. For a remote that holds nothing,
 * of a type whose deltas merge, a name without a checkpoint needs no
 * replica: the merge of its checked records is the delta.
 *
 * It answers only where the stored state is the name's whole state, and
 * says "ask the hydrated name" (undefined) otherwise. A name in memory
 * (hydrated, or evicted but still reachable) is read from its replica,
 * which may hold changes not yet written (reading it costs nothing). The
 * cases that fall back (the caller then holds the name, as before):
 * - no stored metadata (not stored, archived, deleted meanwhile) or one of
 *   another type;
 * - a schema other than the store's (hydration would migrate it first, or
 *   refuse it);
 * - damage of any kind (a torn tail, a corrupt record, a trimmed log
 *   without a checkpoint): hydration truncates or reports it;
 * - a type this store cannot create a replica of, or whose replica cannot
 *   answer (`deltaSince` throws, a malformed remote version included: the
 *   hold path reports that).
 */
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import type { SignalOptions } from '../storage/storage.ts'
import type { Names } from './owner.ts'
import { rebuild, type ReplayTarget } from './replay.ts'

/** One name a remote lacks something of: its type here and the remote's version (`null`: it has nothing). */
export interface StoredWanted {
  readonly name: string
  readonly type: ReplicaType
  readonly since: Uint8Array | null
}

/**
 * What a replica at `wanted.since` lacks of the stored `wanted.name`
 * (null: nothing), or undefined when storage alone cannot tell (see the
 * module comment): the caller asks the hydrated name. Never rejects.
 */
export async function storedDelta(
  context: StoreContext,
  names: Names,
  wanted: StoredWanted,
  options: SignalOptions = {},
): Promise<Uint8Array | null | undefined> {
  const { name, type } = wanted
  try {
    // In memory (hydrated by another reader, or evicted and still reachable): its replica, which may hold changes not yet written.
    const live = names.live(name)
    if (live !== undefined) return live.type === type ? live.replica.deltaSince(wanted.since ?? context.emptyVersion(type)) : undefined
    const stored = await names.stored(name, { signal: options.signal })
    // Hydrated meanwhile (by another reader) is no reason to stop: storage held the state the reads saw, and a change after them is announced (the answer computes that name again).
    if (stored === undefined) return undefined
    const { meta, reader } = stored
    if (meta.type !== type || meta.schema !== (context.options.schema?.version ?? 0)) return undefined
    // A remote that holds nothing, of a type whose deltas merge: without a checkpoint, the merge of the records is what it lacks (no replica made).
    const merge = wanted.since === null ? context.mergerOf(type) : undefined
    const rebuilt = await rebuild<Replica | MergedRecords>({
      storage: reader,
      meta,
      target: meta.lastSeq,
      toEnd: true,
      allowTornTail: false,
      merge: context.replayMergerOf(type),
      signal: options.signal,
      // A method, not an arrow: under tsx (esbuild keepNames) an arrow named by its property costs a defineProperty per name.
      create(snapshot) {
        return merge !== undefined && snapshot === undefined ? new MergedRecords() : context.detachedReplica(type, snapshot)
      },
    })
    const target = rebuilt.replica
    if (target instanceof MergedRecords) {
      if (target.deltas.length === 0) return context.emptyState(type).rest
      return target.deltas.length === 1 ? target.deltas[0] : merge!(target.deltas)
    }
    try {
      return target.deltaSince(wanted.since ?? context.emptyVersion(type))
    } finally {
      ;(target as { destroy?: () => void }).destroy?.()
    }
  } catch {
    return undefined
  }
}

/**
 * The records of a name rebuilt for a remote that holds nothing of it,
 * collected as they are checked (names/replay.ts), for their merge
 * (`ReplicaFactory.mergeDeltas`): the delta an empty replica needs, made
 * without a replica (for Yjs, no Y.Doc made, filled and encoded per name).
 * A malformed record fails the merge, and the name falls back.
 */
class MergedRecords implements ReplayTarget {
  readonly deltas: Uint8Array[] = []

  applyDelta(delta: Uint8Array): boolean {
    this.deltas.push(delta)
    return true
  }
}

/** {@link storedDelta} of each of `wanted`, in order. */
export async function storedDeltas(
  context: StoreContext,
  names: Names,
  wanted: readonly StoredWanted[],
  options: SignalOptions = {},
): Promise<Array<Uint8Array | null | undefined>> {
  const out: Array<Uint8Array | null | undefined> = []
  for (const item of wanted) out.push(await storedDelta(context, names, item, options))
  return out
}
