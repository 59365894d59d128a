/**
 * persistence/ (`concord-crdt/persistence`): the update log, checkpoints and
 * lifecycle of named replicas, on any {@link Storage} (the abstract-level
 * adapter: classic-level on disk, memory-level in memory). The record and
 * checkpoint codecs stay internal (their format: persistence/FORMAT.md).
 */
export type { Storage, StorageKey, StorageEntry, StorageOperation, RangeOptions, WriteOptions, SignalOptions } from './storage/storage.ts'
export { LevelStorage, openLevelStorage, type LevelStorageOptions, type BytesLevel } from './storage/level/index.ts'
export {
  openStore,
  Store,
  type HistoryEntry,
  type NameInfo,
  type NamePage,
  type NamePageOptions,
  type VerifyReport,
  type StoreEvents,
  type ApplyResult,
  type GcReport,
  type CommittedUnitRecord,
  type Loss,
} from './store.ts'
export type { StoreOptions, NameOptions, Durability, Retention, CheckpointPolicy, Schema, Migration, ReplicaCreator, DeltaMerger } from './options.ts'
export type { CommitTimers } from './pipeline/committer.ts'
export type { RemoteDelta, RemoteCommitOptions } from './writes/remote-commit.ts'
export type { RepairReport } from './history/repair.ts'
export type { RetentionReport } from './lifecycle/log-archive.ts'
export type { HistoryQuery, HistoryPage, DiffReport, ChangeAuthor } from './history/queries.ts'
export type { BlameReport, Blame, Author } from './history/blame.ts'
export type { Changes, TextSpan } from './history/diff.ts'
export type { RestorePoint, RestoreReport } from './history/restore.ts'
export type { RevertSelection } from './history/selective-revert.ts'
