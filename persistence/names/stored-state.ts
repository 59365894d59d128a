/**
 * What a remote lacks of a stored name, read from storage without
 * hydrating it (issue 15: a first sync into an empty peer, or a remote far
 * behind): the name's checkpoint and the log after it are rebuilt into a
 * detached replica (names/replay.ts, every record checked as hydration
 * checks it), which is not put in the cache, and the delta is taken from it.
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
import type { ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import type { SignalOptions } from '../storage/storage.ts'
import type { Names } from './owner.ts'
import { rebuild } from './replay.ts'

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
    const meta = await names.meta(name, { signal: options.signal })
    // Hydrated meanwhile (by another reader) is no reason to stop: storage held the state the reads saw, and a change after them is announced (the answer computes that name again).
    if (meta === undefined || meta.type !== type) return undefined
    if (meta.schema !== (context.options.schema?.version ?? 0)) return undefined
    const rebuilt = await rebuild({
      storage: context.storage,
      meta,
      target: meta.lastSeq,
      toEnd: true,
      allowTornTail: false,
      merge: context.replayMergerOf(type),
      signal: options.signal,
      create: (snapshot) => context.detachedReplica(type, snapshot),
    })
    const replica = rebuilt.replica
    try {
      return replica.deltaSince(wanted.since ?? context.emptyVersion(type))
    } finally {
      ;(replica as { destroy?: () => void }).destroy?.()
    }
  } catch {
    return undefined
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
