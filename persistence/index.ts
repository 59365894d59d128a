/** persistence/: the update log, checkpoints and lifecycle of named replicas on abstract-level. */
export type { Storage, StorageKey, StorageEntry, StorageOperation, RangeOptions, WriteOptions, SignalOptions } from './storage.ts'
export { LevelStorage, openLevelStorage, type LevelStorageOptions } from './level/index.ts'
export { FaultStorage, type FaultRule } from './fault-storage.ts'
export { openStore, Store, type HistoryEntry, type NameInfo, type VerifyReport, type StoreEvents, type ApplyResult, type GcReport, type CommittedUnitRecord } from './store.ts'
export type { StoreOptions, NameOptions, Durability, Retention, CheckpointPolicy, Schema, Migration, ReplicaCreator, DeltaMerger } from './options.ts'
export { encodeRecord, decodeRecord, RECORD_VERSION, type LogRecord, type StoredRecord } from './record.ts'
export { encodeCheckpoint, decodeCheckpoint, type Checkpoint } from './checkpoint.ts'
export type { Timers } from './committer.ts'
