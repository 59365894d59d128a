/**
 * Rolling names back after a refused write. When units that log changes
 * the replicas already hold fail (their batch could not be written: a full
 * disk, an I/O error; or a record over the limit its replica loads back),
 * every name they touched goes back to what its log holds, so that memory
 * never shows a change that was refused:
 *
 * - every unit still queued for those names is refused too (with the same
 *   error), and the names of those units join the rollback: a later change
 *   may depend on a refused one (a Yjs item next to a refused insert);
 * - each name's logged state is rebuilt from storage (checkpoint + replay
 *   up to its last written seq) while no batch runs (the pipeline waits);
 * - the replica takes it in place: `reset` (native types, Automerge: the
 *   exact logged state; their ids are never reused), else a compensating
 *   `restore` (a Yjs document, which keeps the refused structs as deleted
 *   ones; they are logged with the name's next change);
 * - listeners see a `change` event (the value went back), the store a
 *   `rolledBack` event.
 */
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { Replica } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import type { NameEntry } from '../names/entry.ts'
import type { Names } from '../names/owner.ts'
import { rebuild } from '../names/replay.ts'
import type { NameState } from '../pipeline/committer.ts'
import type { Writes } from './writes.ts'

/** @internal the committer's failure handler: rolls `states` back (see the module comment). */
export async function rollBack(context: StoreContext, names: Names, writes: Writes, error: ConcordError, states: ReadonlySet<NameState>): Promise<void> {
  // The merging unit is ended first: its runs close and it can be refused whole.
  writes.endMerging()
  let pending = context.committer.refuseQueued(states, error)
  while (pending.size > 0) {
    const rebuilt = new Map<NameState, { entry: NameEntry; logged?: Replica; failure?: unknown }>()
    for (const state of pending) {
      const entry = names.live(state.meta.name)
      if (entry === undefined || entry.state !== state || entry.detached) continue
      try {
        rebuilt.set(state, { entry, logged: await loggedState(context, entry) })
      } catch (failure) {
        rebuilt.set(state, { entry, failure })
      }
    }
    // Changes made while the logged states were read are refused as well.
    writes.endMerging()
    const more = context.committer.refuseQueued(pending, error)
    for (const [, { entry, logged, failure }] of rebuilt) settle(context, writes, entry, error, logged, failure)
    pending = new Set([...more].filter((state) => !rebuilt.has(state) && !pending.has(state)))
  }
}

/** The state the log of `entry` holds (up to its last written seq). */
async function loggedState(context: StoreContext, entry: NameEntry): Promise<Replica> {
  const meta = entry.state.meta
  if (meta.lastSeq === 0) return context.newReplica(meta.type)
  const { replica } = await rebuild({
    storage: context.storage,
    meta,
    target: meta.lastSeq,
    allowTornTail: false,
    merge: context.replayMergerOf(meta.type),
    create: (snapshot) => context.newReplica(meta.type, snapshot),
  })
  return replica
}

function settle(context: StoreContext, writes: Writes, entry: NameEntry, error: ConcordError, logged: Replica | undefined, failure: unknown): void {
  const { replica, name } = entry
  const seq = entry.state.meta.lastSeq
  if (logged === undefined) {
    // The log cannot be read: the replica keeps what it holds, all of it logged with its next change.
    entry.rolledBackTo(context.emptyVersion(entry.type))
    const cause = isConcordError(failure) ? failure : new ConcordError(ErrorCodes.STORAGE_ERROR, String(failure), { cause: failure })
    context.events.emit('error', {
      name,
      error: new ConcordError(
        cause.code,
        `"${name}": a refused change could not be rolled back (${cause.message}); it stays in memory and is logged with the next change`,
        { cause },
      ),
    })
    return
  }
  const version = logged.version()
  try {
    if (replica.reset !== undefined) replica.reset(logged.snapshot())
    else writes.silently(entry, () => replica.restore(logged))
    entry.forgetDigest()
  } catch (cause) {
    context.events.emit('error', {
      name,
      error: isConcordError(cause) ? cause : new ConcordError(ErrorCodes.STORAGE_ERROR, `"${name}": rollback failed: ${String(cause)}`, { cause }),
    })
  }
  // What the replica still holds beyond the log (a compensating change, ids kept seen) goes with the next change.
  entry.rolledBackTo(version)
  context.events.emit('rolledBack', { name, seq, error })
}
