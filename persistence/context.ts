/**
 * What every module of a store shares: its storage, commit pipeline,
 * events, clock, options and how it makes replicas. Per-name state is not
 * here: it belongs to the names' owner (persistence/names/owner.ts).
 */
import { Emitter } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { resolveLimits, trustedLimits, type DocumentLimits } from '../crdt/documents/options.ts'
import { WaitingBudget } from '../crdt/documents/waiting-room.ts'
import { HybridClock } from '../crdt/hlc.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import { nativeTypes } from '../crdt/types/native-type.ts'
import { DEFAULT_CHECKPOINT, type CheckpointPolicy, type ReplicaCreator, type StoreOptions } from './options.ts'
import { Committer, realTimers, type FailureHandler, type CommitTimers } from './pipeline/committer.ts'
import { Signatures } from './signing.ts'
import { TtlNames } from './lifecycle/ttl-names.ts'
import { JointNames } from './names/joint-names.ts'
import type { Storage } from './storage/storage.ts'
import { toHistoryEntry, type StoreEvents } from './store-types.ts'

/** @internal the services a store's modules share. */
export class StoreContext {
  readonly events = new Emitter<StoreEvents>()
  readonly clock: HybridClock
  readonly committer: Committer
  readonly now: () => number
  readonly timers: CommitTimers
  /** Waiting `changes()` iterators, woken on close. */
  readonly waiters = new Set<() => void>()
  /** Reports of damaged tails dropped since the store opened. */
  readonly truncations: Array<{ name: string; fromSeq: number; toSeq: number; reason: string }> = []
  /** Document updates waiting for a dependency, bounded per sender over every name. */
  readonly waitingBudget: WaitingBudget
  /** The bounds every remote delta is checked against (`documentLimits`, defaults filled in). */
  readonly remoteLimits: DocumentLimits
  /**
   * Creates a replica of a type for this store: with the store's document
   * limits less the decoded-size bounds (its replicas replay the store's
   * own log; remote deltas are checked against {@link remoteLimits} first).
   */
  readonly createReplica: ReplicaCreator
  /** What signs this store's records and checks others' (persistence/signing.ts). */
  readonly signatures: Signatures
  /** The names with a TTL of their own (the sweep's shortcut; kept by every metadata the pipeline writes). */
  readonly ttlNames = new TtlNames()
  /** The names that were in a unit of several (names/joint-names.ts): an answer keeps them in one bundle. */
  readonly jointNames: JointNames
  private isClosed = false
  private readonly mergers = new Map<ReplicaType, ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined>()

  constructor(
    readonly storage: Storage,
    readonly agentId: AgentId,
    createReplica: ReplicaCreator,
    readonly options: StoreOptions,
    /** What the pipeline calls when units that log in-memory changes failed (the store's rollback). */
    onFailure: FailureHandler,
  ) {
    this.signatures = new Signatures(agentId, options.signatures)
    this.jointNames = new JointNames(storage)
    const limits = trustedLimits(options.documentLimits)
    // Frozen: the bounds a remote delta is checked against, merged with a replica's own once (stricterLimits' memo).
    this.remoteLimits = Object.freeze(resolveLimits(options.documentLimits))
    const budget = options.waitingBudget
    this.waitingBudget = budget instanceof WaitingBudget ? budget : new WaitingBudget(budget)
    const waitingBudget = this.waitingBudget
    this.createReplica = (type, replicaOptions) => createReplica(type, { limits, waitingBudget, ...replicaOptions })
    this.now = options.now ?? Date.now
    // The clock follows the store's wall clock: the HLC of the newest record is a name's last touch (FORMAT.md).
    this.clock = options.clock ?? new HybridClock(this.now)
    this.timers = options.timers ?? realTimers
    const durability = options.durability ?? { mode: 'sync' }
    this.committer = new Committer(storage, { rpoMs: durability.mode === 'async' ? durability.rpoMs : 100, timers: this.timers, onFailure, now: this.now })
    this.committer.events.on('commit', ({ records }) => {
      if (this.events.listenerCount('commit') === 0) return
      for (const record of records) this.events.emit('commit', toHistoryEntry(record))
    })
    this.committer.observeMetas((meta) => this.ttlNames.noteWritten(meta))
    this.committer.events.on('durable', ({ names }) => {
      for (const item of names) this.events.emit('durable', item)
    })
  }

  /** True once the store started closing (no new work is taken). */
  get closed(): boolean {
    return this.isClosed
  }

  /** Marks the store closed: every later call fails with `CONCORD_CLOSED`; waiting `changes()` iterators end. */
  close(): void {
    this.isClosed = true
    for (const wake of this.waiters) wake()
  }

  /** Throws `CONCORD_CLOSED` once the store is closed. */
  checkOpen(): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.CLOSED, 'the store is closed')
  }

  /** A replica of `type` bound to the store's id and clock. */
  newReplica(type: ReplicaType, snapshot?: Uint8Array): Replica {
    return this.createReplica(type, { agentId: this.agentId, clock: this.clock, snapshot })
  }

  /** A detached replica (its own clock): for `at`, `verify`, `repair`. */
  detachedReplica(type: ReplicaType, snapshot?: Uint8Array): Replica {
    return this.createReplica(type, { agentId: this.agentId, snapshot })
  }

  /** The merge of `type`'s deltas (options.deltaMerger), or undefined when it has none. */
  mergerOf(type: ReplicaType): ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined {
    if (this.mergers.has(type)) return this.mergers.get(type)
    const merger = this.options.deltaMerger?.(type)
    this.mergers.set(type, merger)
    return merger
  }

  /**
   * The merge a rebuild applies `type`'s records with, in runs
   * (names/replay.ts): a document type's; none for native types, whose
   * records apply as cheaply one by one.
   */
  replayMergerOf(type: ReplicaType): ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined {
    return nativeTypes.get(type) === undefined ? this.mergerOf(type) : undefined
  }

  /** The checkpoint policy of a name opened without one of its own (the store's, defaults filled in). */
  get checkpointPolicy(): Required<CheckpointPolicy> {
    this.defaultPolicy ??= { ...DEFAULT_CHECKPOINT, ...this.options.checkpoint }
    return this.defaultPolicy
  }

  private defaultPolicy: Required<CheckpointPolicy> | undefined

  /** The version of an empty replica of `type`. */
  emptyVersion(type: ReplicaType): Uint8Array {
    return this.emptyState(type).version
  }

  /** What the state digest of an empty replica of `type` is made of besides its name (crdt/state-digest.ts), computed once per type. */
  emptyState(type: ReplicaType): EmptyState {
    let state = this.emptyStates.get(type)
    if (!state) {
      const replica = this.newReplica(type)
      const version = replica.version()
      state = { version, rest: replica.deltaSince(version) }
      this.emptyStates.set(type, state)
    }
    return state
  }

  private readonly emptyStates = new Map<ReplicaType, EmptyState>()
}

/** An empty replica's version and what that version lacks (see {@link StoreContext.emptyState}). */
export interface EmptyState {
  readonly version: Uint8Array
  readonly rest: Uint8Array | null
}
