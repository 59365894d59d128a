/**
 * A hydrated name: its replica, its policies, its log tail (the pipeline's
 * {@link NameState}) and the flags the store keeps about it. The flags
 * change only through the methods here, each saying why; the owner of the
 * entries is persistence/names/owner.ts.
 */
import { currentDigest } from '../format/name-meta.ts'
import { replicaDigest, stateDigest } from '../../crdt/state-digest.ts'
import type { EmptyState } from '../context.ts'
import { sha256 } from '../format/digest.ts'
import type { ChangeEvent, Replica } from '../../crdt/replica.ts'
import type { CheckpointPolicy, Durability, Retention } from '../options.ts'
import type { NameState } from '../pipeline/name-state.ts'

/** What an entry is made of. */
export interface NameEntryInit {
  readonly name: string
  readonly state: NameState
  readonly replica: Replica
  readonly durability: Durability
  readonly policy: Required<CheckpointPolicy>
  readonly retention: Retention
  /** Wall time of the first change not in a checkpoint (0: none). */
  readonly dirtySince: number
  /** A new name's: the replica is a new, empty one, whose digest is made of these (until it changes). */
  readonly empty?: EmptyState | undefined
}

/** @internal one hydrated name. */
export class NameEntry {
  readonly name: string
  /** The log tail (changed by the commit pipeline only). */
  readonly state: NameState
  readonly replica: Replica
  readonly durability: Durability
  readonly policy: Required<CheckpointPolicy>
  readonly retention: Retention
  private isDetached = false
  private listener: ((event: ChangeEvent) => void) | undefined
  private repairVersion: Uint8Array | undefined
  private dirtyAt: number
  private checkpointing = false
  private pins = 0
  private applyingNow = 0

  constructor(init: NameEntryInit) {
    this.name = init.name
    this.state = init.state
    this.replica = init.replica
    this.durability = init.durability
    this.policy = init.policy
    this.retention = init.retention
    this.dirtyAt = init.dirtySince
    this.empty = init.empty
    this.state.digester = this
  }

  /** Set while the replica is the new, empty one it was created as (see {@link NameEntryInit.empty}). */
  private empty: EmptyState | undefined

  /** The digest computed since the replica last changed (see {@link digest}). */
  private digestMemo: Uint8Array | undefined

  /** The replica changed (the write path's `change` listener calls it first) or its state was set without a change event (a rollback, an undo): the next {@link digest} is computed anew. */
  forgetDigest(): void {
    this.digestMemo = undefined
    this.empty = undefined
  }

  private digestCaughtUp = false

  /**
   * Whether the name should write its metadata before it leaves memory
   * because the stored one has no current state digest (a folder of an
   * older format: the digest is added lazily); asked once per hydration.
   */
  takeDigestCatchUp(): boolean {
    if (this.digestCaughtUp || this.state.unborn || currentDigest(this.state.meta) !== undefined) return false
    this.digestCaughtUp = true
    return true
  }

  /**
   * The state digest of the replica now (crdt/state-digest.ts), kept until
   * the replica changes: a reconciliation over 100,000 names, many of them
   * still in memory, asks each for it (a SHA-256 over its whole state).
   */
  digest(): Uint8Array {
    // Node's native SHA-256 (a browser build takes the JavaScript one): 4-6 us against 9-34 us per small state.
    // A new name's empty state: its version and rest are the type's (computed once per store).
    this.digestMemo ??= this.empty
      ? stateDigest(this.name, this.replica.type, this.empty.version, this.empty.rest, sha256)
      : replicaDigest(this.name, this.replica, sha256)
    return this.digestMemo
  }

  /** The digest of the replica now if {@link digest} computed it since the replica last changed, else undefined (nothing is computed). */
  computedDigest(): Uint8Array | undefined {
    return this.digestMemo
  }

  /** The type of the name. */
  get type(): Replica['type'] {
    return this.state.meta.type
  }

  // ------------------------------------------------------------ persisted or not

  /** True once the store no longer persists the name's replica (expired, archived, deleted, closed, a failed migration). */
  get detached(): boolean {
    return this.isDetached
  }

  /** Wires the replica to the store: `listener` listens to its `change` events until {@link detach}. */
  attach(listener: (event: ChangeEvent) => void): void {
    this.listener = listener
    this.replica.events.on('change', listener)
  }

  /** The store stops persisting the replica: its changes are refused from now on. */
  detach(): void {
    this.isDetached = true
    if (this.listener !== undefined) this.replica.events.off('change', this.listener)
    this.listener = undefined
  }

  // ------------------------------------------------------------ what the log lacks

  /**
   * Set when the replica holds changes the log lacks although they are no
   * changes to log one by one (a rollback, an undo by a compensating
   * change, a replica that could not be rolled back): the version of what
   * the log holds. The next write of the name logs first a `state` record
   * of what the replica holds beyond it.
   */
  get repairSince(): Uint8Array | undefined {
    return this.repairVersion
  }

  /** The replica went beyond its log without a change to log (see {@link repairSince}); an earlier mark is kept. */
  beyondLog(loggedVersion: Uint8Array): void {
    this.repairVersion ??= loggedVersion
  }

  /** After a rollback: the log holds exactly `loggedVersion`, and the replica may hold more (see {@link repairSince}). */
  rolledBackTo(loggedVersion: Uint8Array): void {
    this.repairVersion = loggedVersion
  }

  /** The `state` record for `since` was written: nothing beyond the log is left (unless marked again since). */
  caughtUp(since: Uint8Array): void {
    if (this.repairVersion === since) this.repairVersion = undefined
  }

  // ------------------------------------------------------------ checkpoints

  /** Wall time of the first change not in a checkpoint (0: none). */
  get dirtySince(): number {
    return this.dirtyAt
  }

  /** A record was written at `now`: the name has changes no checkpoint holds, since then if not before. */
  wrote(now: number): void {
    if (this.dirtyAt === 0) this.dirtyAt = now
  }

  /** A checkpoint holds every change written. */
  checkpointed(): void {
    this.dirtyAt = 0
  }

  /** A checkpoint of the name is queued (no second one is queued meanwhile, and the name is not evicted). */
  get checkpointQueued(): boolean {
    return this.checkpointing
  }

  /** A checkpoint of the name was queued. */
  checkpointStarted(): void {
    this.checkpointing = true
  }

  /** The queued checkpoint was written or failed. */
  checkpointEnded(): void {
    this.checkpointing = false
  }

  // ------------------------------------------------------------ memory

  /** Held in memory by a reader (a sync answer): not evicted while pinned. */
  get pinned(): boolean {
    return this.pins > 0
  }

  /** @internal see {@link pinned} (the owner's leases). */
  pin(): void {
    this.pins++
  }

  /** @internal */
  unpin(): void {
    this.pins--
  }

  /** Whether the cache may let the name go: nothing of it under way or unsynced, no checkpoint queued, not pinned. */
  get evictable(): boolean {
    const { state } = this
    return state.pending === 0 && state.durableSeq === state.meta.lastSeq && !this.checkpointing && this.pins === 0
  }

  // ------------------------------------------------------------ the store's own applies

  /** True while the store applies a remote delta to the replica: its `change` event is the apply's, logged from what the apply returned. */
  get applying(): boolean {
    return this.applyingNow > 0
  }

  /** Runs `fn` (the store's apply of a delta to the replica) with {@link applying} set. */
  whileApplying<T>(fn: () => T): T {
    this.applyingNow++
    try {
      return fn()
    } finally {
      this.applyingNow--
      this.forgetDigest()
    }
  }
}
