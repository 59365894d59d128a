/**
 * The writes of a clean close, made before the pipeline closes: once no
 * hydration is under way and what is queued is written, each name in memory
 * gets the checkpoint its policy asks for on close, or else its stored
 * metadata brought up to its log, so that the next open has no tail to
 * derive. A write that fails does not stop the close.
 */
import type { StoreContext } from '../context.ts'
import type { Names } from '../names/owner.ts'
import { checkpointUnit } from '../writes/checkpoints.ts'

/** Makes the writes of a clean close (see the module comment); resolves once each is done or failed. */
export async function writeOnClose(context: StoreContext, owner: Names): Promise<void> {
  await owner.settled()
  // What is queued (a change made just before close) is written first, so that each name's metadata below is brought up to its whole log.
  await context.committer.written().catch(() => undefined)
  const writes: Promise<unknown>[] = []
  for (const entry of owner.allLive()) {
    const { state } = entry
    if (entry.policy.onClose && state.meta.lastSeq > (state.meta.checkpoints.at(-1)?.seq ?? 0) && state.meta.logBytes >= entry.policy.minBytes) {
      writes.push(context.committer.enqueue(checkpointUnit(context, entry)).catch(() => undefined))
    } else if (state.metaBehind) {
      // Bring the stored metadata up to the log, so the next open has no tail to derive.
      writes.push(
        context.committer
          .enqueue({
            sync: false,
            states: [state],
            build: (b) => b.setMeta(state, b.meta(state)),
          })
          .catch(() => undefined),
      )
    }
  }
  await Promise.all(writes)
}
