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
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { Replica } from '../crdt/replica.ts'
import type { NameState } from './committer.ts'
import { rebuild } from './replay.ts'
import type { StoreCore } from './store-core.ts'
import type { Entry } from './store-types.ts'
import type { Writes } from './writes.ts'

/** @internal the committer's failure handler: rolls `states` back (see the module comment). */
export async function rollBack(core: StoreCore, writes: Writes, error: ConcordError, states: ReadonlySet<NameState>): Promise<void> {
  // The merging unit is ended first: its runs close and it can be refused whole.
  writes.endMerging()
  let pending = core.committer.refuseQueued(states, error)
  while (pending.size > 0) {
    const rebuilt = new Map<NameState, { entry: Entry; logged?: Replica; failure?: unknown }>()
    for (const state of pending) {
      const entry = core.cache.live(state.meta.name)
      if (entry === undefined || entry.state !== state || entry.detached) continue
      try {
        rebuilt.set(state, { entry, logged: await loggedState(core, entry) })
      } catch (failure) {
        rebuilt.set(state, { entry, failure })
      }
    }
    // Changes made while the logged states were read are refused as well.
    writes.endMerging()
    const more = core.committer.refuseQueued(pending, error)
    for (const [state, { entry, logged, failure }] of rebuilt) settle(core, writes, entry, error, logged, failure)
    pending = new Set([...more].filter((state) => !rebuilt.has(state) && !pending.has(state)))
  }
}

/** The state the log of `entry` holds (up to its last written seq). */
async function loggedState(core: StoreCore, entry: Entry): Promise<Replica> {
  const meta = entry.state.meta
  if (meta.lastSeq === 0) return core.newReplica(meta.type)
  const { replica } = await rebuild({
    storage: core.storage, meta, target: meta.lastSeq, allowTornTail: false,
    create: (snapshot) => core.newReplica(meta.type, snapshot),
  })
  return replica
}

function settle(core: StoreCore, writes: Writes, entry: Entry, error: ConcordError, logged: Replica | undefined, failure: unknown): void {
  const { replica, name } = entry
  const seq = entry.state.meta.lastSeq
  if (logged === undefined) {
    // The log cannot be read: the replica keeps what it holds, all of it logged with its next change.
    entry.repairSince = core.emptyVersion(entry.state.meta.type)
    const cause = isConcordError(failure) ? failure : new ConcordError(ErrorCodes.STORAGE_ERROR, String(failure), { cause: failure })
    core.events.emit('error', { name, error: new ConcordError(cause.code, `"${name}": a refused change could not be rolled back (${cause.message}); it stays in memory and is logged with the next change`, { cause }) })
    return
  }
  const version = logged.version()
  try {
    if (replica.reset !== undefined) replica.reset(logged.snapshot())
    else writes.silently(entry, () => replica.restore(logged))
  } catch (cause) {
    core.events.emit('error', { name, error: isConcordError(cause) ? cause : new ConcordError(ErrorCodes.STORAGE_ERROR, `"${name}": rollback failed: ${String(cause)}`, { cause }) })
  }
  // What the replica still holds beyond the log (a compensating change, ids kept seen) goes with the next change.
  entry.repairSince = version
  core.events.emit('rolledBack', { name, seq, error })
}
