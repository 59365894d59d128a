/**
 * Types of the store: what its public methods and events return.
 */
import { bytesEqual } from '../crdt/codec.ts'
import type { ConcordError } from '../crdt/errors.ts'
import type { HlcTimestamp } from '../crdt/hlc.ts'
import { metaOf, type Provenance } from '../crdt/provenance.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import { toHex } from './format/checksum.ts'
import type { CommittedRecord } from './pipeline/committer.ts'
import type { RecordSignature } from '../crdt/signature.ts'
import type { SignatureInfo } from './signing.ts'

/** One record as `history` and `changes` return it. */
export interface HistoryEntry {
  readonly name: string
  readonly seq: number
  readonly hlc: HlcTimestamp
  /** The authoring agent (who made the change; for a relayed change, its author, not the relay). */
  readonly agent: string
  /** Why the change was made (`transact(fn, { message })`), when given. */
  readonly message?: string
  /** Application metadata of the change (`transact(fn, { meta })`), when given. */
  readonly meta?: Readonly<Record<string, unknown>>
  /** When its author made it, for a change made on another peer (`hlc` is when it was logged here). */
  readonly authored?: HlcTimestamp
  /**
   * The author's signature (record format 3), checked as it is read:
   * `verified` (by the author's known key), `unbound` (it verifies, but
   * nothing binds its key to the author) or `invalid`; absent when the
   * record is unsigned. Shown by `history`, `historyPage` and `changes`.
   */
  readonly signature?: SignatureInfo
  /** `delta`, or `state` (a full-state record written to repair a failed write). */
  readonly kind: 'delta' | 'state'
  /** The delta bytes (a `state` record: the whole state, as a delta). */
  readonly delta: Uint8Array
  /** SHA-256 of the record, hex. */
  readonly hash: string
  /** Encoded size of the record in bytes. */
  readonly size: number
}

/** A name as `names()` lists it. */
export interface NameInfo {
  readonly name: string
  readonly type: ReplicaType
  /** Records retained in the log. */
  readonly records: number
  /** Seq of the newest record. */
  readonly lastSeq: number
  /** Bytes recovery reads: newest checkpoint + records after it. */
  readonly size: number
  /** Wall time (ms) of the last write. */
  readonly lastChange: number
  readonly checkpoints: number
  readonly schema: number
  /** True when the name lives in an archive file (rehydrated on open). */
  readonly archived: boolean
}

/** Options of `Store.pageNames`: which page of the names. */
export interface NamePageOptions {
  /** Only names starting with this. */
  readonly prefix?: string | undefined
  /** The `cursor` of the previous page (names after it); none: the first page. */
  readonly cursor?: string | undefined
  /** Names per page, 1 to 10,000 (default 100). */
  readonly limit?: number | undefined
  /** Only names for which this holds (the page still holds up to `limit` of them). */
  readonly where?: ((info: NameInfo) => boolean) | undefined
  readonly signal?: AbortSignal | undefined
}

/** A page of names (`Store.pageNames`), in key order (by code point). */
export interface NamePage {
  readonly names: readonly NameInfo[]
  /** Where the next page starts (pass it as `cursor`); undefined: this is the last page. */
  readonly cursor: string | undefined
}

/** Result of `verify(name)`. */
export interface VerifyReport {
  readonly name: string
  readonly ok: boolean
  readonly firstSeq: number
  readonly lastSeq: number
  readonly records: number
  readonly checkpoints: number
  /** What is wrong, empty when ok. */
  readonly problems: readonly string[]
  /**
   * The records replayed, by signature: `verified` by their author's known
   * key, signed by a key nothing binds to the author (`unbound`), unsigned.
   * A signature that does not verify is a problem. Absent when the log was
   * not replayed.
   */
  readonly signatures?: { readonly verified: number; readonly unbound: number; readonly unsigned: number }
}

/** Events of a store. */
export interface StoreEvents extends Record<string, unknown> {
  /** A record was written (in sync mode: and fsynced). */
  commit: HistoryEntry
  /**
   * One unit (a local change, an `atomic` block, a `commit` call) is durable
   * per its mode; its records belong together. `origin` is what the caller of
   * `commit`/`applyRemote` passed (undefined for local changes). Sync ships
   * units from here, so peers get changes only after they are logged.
   */
  committed: {
    readonly records: readonly CommittedUnitRecord[]
    readonly origin?: unknown
    /** The unit's records were announced by an `applied` event before they were durable (a remote commit's). */
    readonly announced?: boolean
  }
  /**
   * A remote commit (`commit`/`applyRemote`) is applied and its unit queued
   * for writing, not yet durable: its place in the log is fixed. Emitted only
   * for a unit that logs the remote deltas alone (no local change joined it),
   * with the records it will write (`seq` not yet known: 0); its `committed`
   * event follows once durable, with `announced: true`. A peer relays remote
   * changes from here (they are the sender's, who keeps them until it is
   * acknowledged) and its own changes only from `committed`.
   */
  applied: { readonly records: readonly CommittedUnitRecord[]; readonly origin?: unknown }
  /** Records of `name` up to `seq` are on stable storage. */
  durable: { readonly name: string; readonly seq: number }
  /** A damaged tail of a name's log was dropped on open. */
  truncated: { readonly name: string; readonly fromSeq: number; readonly toSeq: number; readonly reason: string }
  /** A name damaged in the middle of its log was repaired (`Store.repair`). */
  repaired: { readonly name: string; readonly cutAt?: number; readonly reason?: string; readonly lostRecords?: number; readonly salvagedRecords?: number }
  /**
   * A refused write (`error`: a storage error, a record over a limit) rolled
   * `name` back to what its log holds, up to `seq`: its replica emitted a
   * `change` with the value going back (persistence/rollback.ts).
   */
  rolledBack: { readonly name: string; readonly seq: number; readonly error: ConcordError }
  /**
   * Found on open: records of `name` written before the last clean close
   * that the store no longer holds (persistence/seal.ts); `fromSeq` 1: the
   * whole name. Emitted right after the store opens.
   */
  lost: { readonly name: string; readonly fromSeq: number; readonly toSeq: number; readonly closedAt: number; readonly foundAt: number }
  /** A checkpoint was written. */
  checkpoint: { readonly name: string; readonly seq: number; readonly size: number }
  /** A name was expired (TTL) and its data deleted. */
  expired: { readonly name: string }
  /** A name was moved to an archive file. */
  archived: { readonly name: string; readonly file: string }
  /** An archived name was brought back. */
  rehydrated: { readonly name: string }
  /** A name's data was migrated to a newer schema version. */
  migrated: { readonly name: string; readonly from: number; readonly to: number }
  /** A background failure (a change that could not be logged, a failed sweep). */
  error: { readonly name?: string; readonly error: ConcordError }
}

/** One record of a committed unit (see the `committed` event). */
export interface CommittedUnitRecord {
  readonly name: string
  readonly type: ReplicaType
  readonly seq: number
  /** The delta (or, for a `state` record, the whole state as a delta). */
  readonly delta: Uint8Array
  readonly kind: 'delta' | 'state'
  /** The author of the change (see {@link HistoryEntry.agent}). */
  readonly agent: string
  readonly message?: string
  /** Its application metadata as canonical JSON. */
  readonly metaJson?: string
  /** When its author made it (the record's time, for a change made here). */
  readonly authored: HlcTimestamp
  /** The author's signature, when the record has one (sent on with the change). */
  readonly signature?: RecordSignature
}

/**
 * Who made a change and why, recorded in every record of the change:
 * `agent` (default: the store's agent id; give it when this peer makes a
 * change on someone else's behalf: the MCP server, the y-websocket route,
 * a relayed change's author), `message` (why, at most 4096 characters) and
 * `meta` (a JSON object of at most 16 KiB: tool, session, model,
 * causedBy, ...). See crdt/provenance.ts.
 */
export type ChangeProvenance = Provenance

/** Result of `applyRemote`. */
export interface ApplyResult {
  /** False when the delta added nothing (it was not logged). */
  readonly changed: boolean
  /** The seq of the record written, or the current seq when nothing changed. */
  readonly seq: number
}

/** Result of `gc()`. */
export interface GcReport {
  readonly deletedRecords: number
  readonly deletedCheckpoints: number
  readonly orphanNames: number
}

/** A committed record as `history`, `changes` and the `commit` event show it. */
export function toHistoryEntry(record: CommittedRecord, signature?: SignatureInfo): HistoryEntry {
  const meta = metaOf(record.metaJson)
  return {
    ...(signature !== undefined ? { signature } : {}),
    ...(record.message !== undefined ? { message: record.message } : {}),
    ...(meta !== undefined ? { meta } : {}),
    ...(record.authored !== undefined ? { authored: record.authored } : {}),
    name: record.name,
    seq: record.seq,
    hlc: record.hlc,
    agent: record.agent,
    kind: record.kind,
    delta: record.delta,
    hash: toHex(record.hash),
    size: record.size,
  }
}

/** Same state: equal snapshots, or equal value and version. */
export function sameState(a: Replica, b: Replica): boolean {
  if (bytesEqual(a.snapshot(), b.snapshot())) return true
  return bytesEqual(a.version(), b.version()) && JSON.stringify(a.value()) === JSON.stringify(b.value())
}

/** The store's durability mode and when it last fsynced (`store.durability()`). */
export interface DurabilityStatus {
  /** `sync`: a write resolves once fsynced; `async`: once written, fsynced within `rpoMs`. */
  readonly mode: 'sync' | 'async'
  readonly rpoMs?: number
  /** When (the store's wall clock, ms) the last fsynced batch was written; null: none since the store opened. */
  readonly lastFsyncAt: number | null
  /** Batches written and how many of them were fsynced, since the store opened. */
  readonly batches: number
  readonly fsyncs: number
}
