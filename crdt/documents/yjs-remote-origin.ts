/**
 * The Yjs transaction origin of a delta a YjsReplica applied (`applyDelta`,
 * a prepared delta's `apply`): it names the replica and the caller's origin,
 * and tells the replica's own remote applies from local transactions.
 */
import type { YjsReplica } from './yjs-replica.ts'

/** The Yjs transaction origin of deltas applied through `applyDelta`. */
export class YjsRemoteOrigin {
  constructor(
    /** The replica that applied the delta. */
    readonly replica: YjsReplica,
    /** What the caller passed to `applyDelta`. */
    readonly origin: unknown,
  ) {}
}

/** True when a Yjs transaction origin marks a delta applied by a Concord replica. */
export function isYjsRemoteOrigin(origin: unknown): origin is YjsRemoteOrigin {
  return origin instanceof YjsRemoteOrigin
}
