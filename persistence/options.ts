/**
 * Options of a store and of a name, with their defaults.
 */
import type { SignatureOptions } from './signing.ts'
import type { DocumentLimits } from '../crdt/documents/options.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { WaitingBudget, WaitingBudgetLimits } from '../crdt/documents/waiting-room.ts'
import type { HybridClock } from '../crdt/hlc.ts'
import type { Replica, ReplicaOptions, ReplicaType } from '../crdt/replica.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import type { CommitTimers } from './pipeline/committer.ts'
import type { Storage } from './storage/storage.ts'

/**
 * When an append resolves. `sync`: after its record is fsynced (RPO 0;
 * concurrent appends share one fsync). `async`: once the record reached the
 * OS (a process crash loses nothing), fsynced within `rpoMs` (a power cut
 * loses at most that window).
 */
export type Durability = { readonly mode: 'sync' } | { readonly mode: 'async'; readonly rpoMs: number }

/**
 * What to keep of a name's history: a lifecycle policy (FORMAT.md,
 * "Retention").
 * - `'full'` (the default): every record, forever. Checkpoints speed up
 *   recovery and never delete records; only old checkpoints are dropped.
 * - `{ archiveAfterMs: T }`: records older than `T` ms (and before a
 *   checkpoint) move from LevelDB to compressed segment files in the archive
 *   folder; `history`, `at` and `verify` still read them.
 * - `{ deleteAfterMs: T }`: records older than `T` ms (and before a
 *   checkpoint) are deleted, for data that must not be kept.
 * - `{ checkpoints: K }`: the latest K checkpoints and the records after the
 *   oldest of them; older records are deleted at each checkpoint.
 * The time-window policies are applied by the sweep and by
 * `store.applyRetention(name)`.
 */
export type Retention = 'full' | { readonly archiveAfterMs: number } | { readonly deleteAfterMs: number } | { readonly checkpoints: number }

/** When to write a checkpoint of a name (whichever comes first). */
export interface CheckpointPolicy {
  /** After this many records since the last checkpoint (default 1000; 0 = never). */
  readonly everyRecords?: number | undefined
  /** After this many bytes of records since the last checkpoint (default 1 MiB; 0 = never). */
  readonly everyBytes?: number | undefined
  /** After this many ms with changes not in a checkpoint (default 60000; 0 = never). */
  readonly everyMs?: number | undefined
  /** On `close()` (default true). */
  readonly onClose?: boolean | undefined
  /**
   * A checkpoint by time (`everyMs`) or on close is written only once the
   * records after the newest checkpoint take at least this many bytes
   * (default 4096; 0: whatever they take). Replaying a shorter log costs
   * less than loading a snapshot, and with the history kept a snapshot of
   * a small name takes more room than its records (issue 19).
   */
  readonly minBytes?: number | undefined
}

/**
 * One migration step: brings the state of a replica from version `n - 1` to
 * `n` by mutating it through its own API (the changes are logged and
 * replicated like any other). It must be deterministic and idempotent across
 * agents, because every agent runs it when it hydrates old data.
 */
export type Migration = (replica: Replica, context: { readonly name: string; readonly from: number; readonly to: number }) => void

/** Application schema: the current version and the steps up to it. */
export interface Schema {
  /** The version this code writes (>= 0). */
  readonly version: number
  /** `{ 2: step }` takes version 1 to 2; every step from the stored version up must exist. */
  readonly migrations?: Readonly<Record<number, Migration>>
}

/** Creates a replica of a type (defaults to the crdt registry's `createReplica`). */
export type ReplicaCreator = (type: ReplicaType, options: ReplicaOptions) => Replica

/**
 * The delta merge of a type (see `ReplicaFactory.mergeDeltas`), or undefined
 * when its deltas cannot be merged. Defaults to the crdt registry's.
 */
export type DeltaMerger = (type: ReplicaType) => ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined

/** Options of {@link openStore}. */
export interface StoreOptions {
  /** LevelDB folder; omitted (and no `storage`) -> in memory. */
  readonly dir?: string | undefined
  /** A storage to use instead of opening one (e.g. a fault-injecting one in tests). */
  readonly storage?: Storage | undefined
  /** The agent id, persisted with the data. */
  readonly agentId: AgentId | string
  /**
   * Claim the store for `agentId` when it has no owner yet (default true).
   * `false` (maintenance tools): a new store is created unclaimed, an
   * unclaimed one stays so, and the first opener that claims it owns it.
   */
  readonly claim?: boolean | undefined
  /** Default durability of every name (default `{ mode: 'sync' }`). */
  readonly durability?: Durability | undefined
  /**
   * Which local changes merge while they wait in the commit queue (see
   * `deltaMerger`): of every name (`'all'`, the default), or of `async`
   * names only (`'async'`: a `sync` name then logs one record per change).
   * A change of a `sync` name made while a batch is being written and
   * fsynced joins the waiting unit of the changes made meanwhile, and they
   * are logged and sent as one record. Each change is still fsynced in the
   * batch it would have been in alone, so nothing is acknowledged earlier or
   * later; only changes of this store's agent without a message or meta
   * merge (an `atomic` block, a remote commit or a change with provenance
   * ends the run). A busy writer then sends one commit per fsync instead of
   * one per change (issue 19).
   */
  readonly mergeLocal?: 'async' | 'all' | undefined
  /**
   * Signed provenance (persistence/signing.ts): the key that signs this
   * store's own records, the keys of other authors, and whether remote
   * changes must prove their author (default: no key, nothing required).
   */
  readonly signatures?: SignatureOptions | undefined
  /** Default checkpoint policy. */
  readonly checkpoint?: CheckpointPolicy | undefined
  /** Default retention (default `'full'`: every record is kept). */
  readonly retention?: Retention | undefined
  /** Names kept hydrated in memory (default 1000). */
  readonly cacheSize?: number | undefined
  /** Time to live of names untouched that long, in ms (default: none). */
  readonly ttlMs?: number | undefined
  /** Archival of cold names. */
  readonly archive?: {
    /** Folder of the archive files (default: `<dir>.archive`). */
    readonly dir?: string
    /** Archive names untouched for this long, in ms (default: never). */
    readonly afterMs?: number
  }
  /** Period of the background sweep (TTL, archival, timed checkpoints), ms (default 10000; 0 = off). */
  readonly sweepMs?: number | undefined
  /**
   * On a clean close, compact a small LevelDB folder (default true): one of
   * at most 16 MiB whose logs hold an eighth of it is written out as
   * compressed tables without the values the session overwrote (a quarter
   * less disk for small documents, tens of ms). `false` leaves the logs to
   * the next open.
   */
  readonly compactOnClose?: boolean | undefined
  /** Default application schema (default version 0, no migrations). */
  readonly schema?: Schema | undefined
  /** Creates replicas (default: the crdt registry). */
  readonly createReplica?: ReplicaCreator | undefined
  /**
   * Merges deltas, by type (default: the crdt registry's `mergeDeltas`).
   * In `async` mode, the local changes of a name queued together are logged
   * and announced as one merged record; `() => undefined` turns that off
   * (one record per change).
   */
  readonly deltaMerger?: DeltaMerger | undefined
  /**
   * Limits on the documents' remote deltas (`commit`, `applyRemote`): bytes,
   * decoded operations and content, updates waiting for a dependency (see
   * `DocumentLimits`; defaults in `DEFAULT_DOCUMENT_LIMITS`), checked by each
   * replica's `prepareDelta` before anything is applied. The store's own
   * log and checkpoints are replayed without the decoded-size bounds.
   */
  readonly documentLimits?: Partial<DocumentLimits> | undefined
  /**
   * The per-sender bound on document updates waiting for a dependency, over
   * every name of the store (a {@link WaitingBudget}, or its limits; default
   * 4,000 updates and 32 MiB per sender).
   */
  readonly waitingBudget?: WaitingBudget | Partial<WaitingBudgetLimits> | undefined
  /** The agent's clock, shared with its replicas. */
  readonly clock?: HybridClock | undefined
  /** Wall clock in ms (TTL, archival, timed checkpoints). */
  readonly now?: (() => number) | undefined
  /** CommitTimers (async flushes, sweeps); injectable for tests. */
  readonly timers?: CommitTimers | undefined
  readonly signal?: AbortSignal | undefined
}

/** Per-name overrides, given when opening the name. */
export interface NameOptions {
  readonly durability?: Durability | undefined
  readonly checkpoint?: CheckpointPolicy | undefined
  readonly retention?: Retention | undefined
  /** Time to live in ms (persisted with the name). */
  readonly ttlMs?: number | undefined
  readonly schema?: Schema | undefined
  /** Do not create the name if it does not exist (`CONCORD_NOT_FOUND`). */
  readonly mustExist?: boolean | undefined
  readonly signal?: AbortSignal | undefined
}

/** Default checkpoint policy. */
export const DEFAULT_CHECKPOINT: Required<CheckpointPolicy> = { everyRecords: 1000, everyBytes: 1 << 20, everyMs: 60_000, onClose: true, minBytes: 4096 }
/** Default retention. */
export const DEFAULT_RETENTION: Retention = 'full'
/** Checkpoints kept unless retention says `{ checkpoints: K }`. */
export const FULL_RETENTION_CHECKPOINTS = 2

/** Checks a retention policy (`CONCORD_INVALID_ARGUMENT` for an unknown shape or a window that is not a time); returns it. */
export function checkRetention(retention: Retention | undefined, what = 'retention'): Retention | undefined {
  if (retention === undefined || retention === 'full') return retention
  const window = (key: string): boolean => {
    const value = (retention as Record<string, unknown>)[key]
    return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
  }
  const keys = retention !== null && typeof retention === 'object' ? Object.keys(retention) : []
  const valid =
    keys.length === 1 &&
    ((keys[0] === 'archiveAfterMs' && window('archiveAfterMs')) ||
      (keys[0] === 'deleteAfterMs' && window('deleteAfterMs')) ||
      (keys[0] === 'checkpoints' && window('checkpoints')))
  if (!valid) {
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `${what} must be 'full', { archiveAfterMs: ms }, { deleteAfterMs: ms } or { checkpoints: K }, got ${JSON.stringify(retention)}`,
    )
  }
  return retention
}
