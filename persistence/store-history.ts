/**
 * The store's history and maintenance methods, as the base class of the
 * facade `Store` (persistence/store.ts): reading a name's records
 * (`history`, `historyPage`, `diff`, `blame`, `at`, `changes`), changing it
 * from them (`revert`, `restoreTo`), checking and mending it (`verify`,
 * `repair`), the records of a sync answer (`recordsSince`), and the names'
 * lifecycle (`names`, `pageNames`, `delete`, `expire`, `archive`, `gc`,
 * retention, the sweep). Each method hands the call to the one module of
 * history/ or lifecycle/ that does the work.
 */
import { encodeProvenance } from '../crdt/provenance.ts'
import type { Replica } from '../crdt/replica.ts'
import type { StoreContext } from './context.ts'
import { type RecordRun, type RecordRunLimits, recordsSince } from './history/answer-records.ts'
import type { BlameReport } from './history/blame.ts'
import { type DiffReport, type HistoryPage, type HistoryQuery, MAX_HISTORY_SCAN, Queries } from './history/queries.ts'
import { repairName, type RepairReport } from './history/repair.ts'
import { type RestorePoint, type RestoreReport, restoreTo } from './history/restore.ts'
import { type RevertSelection, revertAgent } from './history/selective-revert.ts'
import { TimeTravel } from './history/time-travel.ts'
import type { Archival } from './lifecycle/archival.ts'
import { Lifecycle } from './lifecycle/lifecycle.ts'
import type { RetentionReport } from './lifecycle/log-archive.ts'
import { acceptLoss } from './lifecycle/seal.ts'
import type { Names } from './names/owner.ts'
import type { SignalOptions } from './storage/storage.ts'
import type { ChangeProvenance, GcReport, HistoryEntry, NameInfo, NamePage, NamePageOptions, VerifyReport } from './store-types.ts'
import type { Writes } from './writes/writes.ts'

/**
 * How long `Store.recordsSince` waits for changes applied and not yet
 * logged to be written before it reads the log (sync/PROTOCOL.md "Answers
 * made of records": an answer never waits long for the disk).
 */
export const RECORDS_WRITE_WAIT_MS = 250

/** The history and maintenance methods of a `Store` (its base class; a store is made by `openStore`). */
export class StoreHistory {
  /** @internal what the store's modules share. */
  protected readonly context: StoreContext
  /** @internal the owner of the names. */
  protected readonly owner: Names
  /** @internal the write path. */
  protected readonly writes: Writes
  /** @internal listing, delete, TTL, gc, retention, the sweep. */
  protected readonly lifecycle: Lifecycle
  private readonly archival: Archival
  private readonly timeTravel: TimeTravel
  private readonly queries: Queries

  /** @internal the store's constructor composes the modules (persistence/store.ts). */
  constructor(context: StoreContext, owner: Names, writes: Writes, archival: Archival) {
    this.context = context
    this.owner = owner
    this.writes = writes
    this.archival = archival
    this.timeTravel = new TimeTravel(context, owner, writes)
    this.queries = new Queries(context, owner, this.timeTravel)
    this.lifecycle = new Lifecycle(context, owner, archival)
  }

  // ---------------------------------------------------------------- reading history

  /**
   * Records of `name`, oldest first from `from` (default: the first kept,
   * archived ones included), at most `limit` (default 100); newest first
   * when `reverse`. With `agent`, `since` or `until` (ms, the record's HLC
   * wall time), only the records that match among the next
   * {@link MAX_HISTORY_SCAN}: use {@link historyPage} to page on.
   */
  async history(name: string, options: HistoryQuery = {}): Promise<HistoryEntry[]> {
    if (options.agent === undefined && options.since === undefined && options.until === undefined && options.cursor === undefined) {
      return this.timeTravel.history(name, options)
    }
    return (await this.queries.historyPage(name, options)).entries
  }

  /**
   * A page of `name`'s records matching `query` (author, time window,
   * direction), with the `cursor` of the next page when there is more.
   */
  historyPage(name: string, query: HistoryQuery = {}): Promise<HistoryPage> {
    return this.queries.historyPage(name, query)
  }

  /**
   * What changed in `name` from right after record `fromSeq` (0: the
   * empty state) to right after `toSeq` (default: the last), as structured
   * data per type: a text's inserted and deleted spans, a map's JSON Patch
   * and changed keys, a set's added and removed elements, a counter's delta
   * per author; with the records in between (author, time, message).
   */
  diff(name: string, fromSeq: number, toSeq?: number, options: SignalOptions = {}): Promise<DiffReport> {
    return this.queries.diff(name, fromSeq, toSeq, options)
  }

  /**
   * Writes the whole store as it was at `at` (an HLC, or a wall-clock time
   * in ms) to a new folder `dir`: every name cut after its last record at or
   * before that time, its records copied as they are (persistence/history/
   * restore.ts). The copy is unclaimed: open it with a new agent id.
   */
  restoreTo(dir: string, options: { at: RestorePoint } & SignalOptions): Promise<RestoreReport> {
    return restoreTo(this.context, this.owner, dir, options)
  }

  /**
   * Who wrote what `name` holds now: a Yjs text span by span (the record
   * and author that inserted each), map and register fields by who set
   * them last, a counter's contribution per author, a set's elements by
   * who added them; replaying the newest `limit` records (default 500).
   */
  blame(name: string, options: { field?: string; limit?: number } & SignalOptions = {}): Promise<BlameReport> {
    return this.queries.blame(name, options)
  }

  /**
   * The records of `name` that a replica at `since` lacks, oldest first,
   * given `lack` (what it lacks: `deltaSince(since)` of the current state),
   * for an anti-entropy answer made of records (sync/PROTOCOL.md); undefined
   * when they cannot be told or exceed `limits` (the answer is then merged
   * state). Changes applied here and not yet logged are written first;
   * with `until`, records logged after it are left out.
   */
  async recordsSince(name: string, since: Uint8Array, lack: Uint8Array, limits: RecordRunLimits): Promise<RecordRun | undefined> {
    this.context.checkOpen()
    const type = this.owner.knownType(name)
    if (type === undefined) return undefined
    const live = this.owner.live(name)
    // In memory with a change not yet logged (no `settledSeq`): written first, if that is quick.
    if (live !== undefined && live.state.pending > 0) await this.writtenWithin(RECORDS_WRITE_WAIT_MS)
    return recordsSince(this.context, this.owner, name, type, since, lack, limits)
  }

  /**
   * Resolves once what is queued is written, or after `ms` (a write held
   * up, say by a slow fsync: what is not logged yet is then not read, and
   * an answer falls back to merged state rather than wait for the disk).
   */
  private writtenWithin(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.context.timers.setTimeout(resolve, ms)
      this.context.committer.written().then(
        () => {
          this.context.timers.clearTimeout(timer)
          resolve()
        },
        () => {
          this.context.timers.clearTimeout(timer)
          resolve()
        },
      )
    })
  }

  /**
   * The replica as it was right after record `seq` (0 = empty), rebuilt from
   * the nearest checkpoint at or before it. A detached copy: changing it
   * changes nothing stored.
   */
  at(name: string, seq: number, options: SignalOptions = {}): Promise<Replica> {
    return this.timeTravel.at(name, seq, options)
  }

  /**
   * Makes a new local change of `name` that brings its value back to what it
   * was at `seq`; or, given `{ agent, since }`, that undoes that agent's
   * changes since that time (ms) where the type allows it (Yjs texts, PN
   * counters, OR-sets, registers, flags, OR-map keys: see
   * persistence/history/selective-revert.ts). It is logged and replicates
   * like any change. Resolves with the seq of the new record, or null when
   * there was nothing to change.
   */
  async revert(name: string, target: number | RevertSelection, options: SignalOptions & ChangeProvenance = {}): Promise<number | null> {
    const provenance = { signal: options.signal, ...encodeProvenance(options) }
    if (typeof target === 'number') return this.timeTravel.revert(name, target, provenance)
    return (await revertAgent(this.context, this.owner, this.timeTravel, this.writes, name, target, provenance)).seq
  }

  /**
   * The records of `name` from `since` (default: the first retained), then
   * live as new ones commit. Ends when `signal` aborts or the store closes.
   */
  changes(name: string, options: { since?: number } & SignalOptions = {}): AsyncGenerator<HistoryEntry> {
    return this.timeTravel.changes(name, options)
  }

  /**
   * Checks `name`: every retained record's checksum, seq and hash chain, every
   * checkpoint against its record, and that replaying the log from the start
   * (where retained, else from the oldest checkpoint) gives each checkpoint's
   * state and the live state.
   */
  verify(name: string, options: SignalOptions = {}): Promise<VerifyReport> {
    return this.timeTravel.verify(name, options)
  }

  /**
   * Repairs a name whose log is damaged in the middle (opening it fails
   * with `CONCORD_CORRUPT_RECORD`): keeps the newest usable checkpoint and
   * the intact records before the damage, drops the damaged records and
   * writes every intact record after them again, renumbered and chained
   * anew (persistence/history/repair.ts). A healthy name gives `repaired:
   * false`; a damaged name open in this store `CONCORD_LOCKED`.
   */
  async repair(name: string, options: SignalOptions = {}): Promise<RepairReport> {
    this.context.checkOpen()
    // A recorded loss (persistence/lifecycle/seal.ts) is accepted: verify stops failing for it.
    const loss = await acceptLoss(this.context.storage, name)
    if (loss !== undefined) {
      // As Store.typeOf: checked open again after the wait.
      this.context.checkOpen()
      if ((await this.owner.typeOf(name, options)) === undefined) {
        return { name, repaired: true, reason: `accepted the loss of the whole name (records 1..${loss.toSeq})`, lostRecords: loss.toSeq }
      }
    }
    const report = await repairName(this.context, this.owner, name, options)
    if (loss === undefined) return report
    const reason = `accepted the loss of records ${loss.fromSeq}..${loss.toSeq}`
    return {
      ...report,
      repaired: true,
      reason: report.reason ? `${report.reason}; ${reason}` : reason,
      lostRecords: (report.lostRecords ?? 0) + loss.toSeq - loss.fromSeq + 1,
    }
  }

  /** Every stored name (archived ones included), in name order. For many names, {@link pageNames}. */
  names(options: SignalOptions = {}): Promise<NameInfo[]> {
    return this.lifecycle.list(options)
  }

  /**
   * A page of the stored names (archived ones included) in key order (by
   * code point): up to `limit` (default 100) of those starting with
   * `prefix`, after `cursor`, for which `where` holds, and the cursor of the
   * next page. Reads about as many names as it returns (plus those `where`
   * leaves out), whatever the store holds.
   */
  pageNames(options: NamePageOptions = {}): Promise<NamePage> {
    return this.lifecycle.page(options)
  }

  // ---------------------------------------------------------------- lifecycle

  /** Deletes `name` and all its data (an opened replica of it stops being persisted). */
  delete(name: string, options: SignalOptions = {}): Promise<boolean> {
    return this.lifecycle.delete(name, options)
  }

  /**
   * Expires every name untouched (no write) for its TTL and not among the
   * recently used names kept in memory: its data is deleted, and a replica of
   * it still held by the application stops being persisted. Runs in the
   * background sweep; returns the names. `dryRun`: returns the names that
   * would expire and deletes nothing; `only`: considers these names only.
   */
  expire(options: SignalOptions & { readonly dryRun?: boolean; readonly only?: readonly string[] } = {}): Promise<string[]> {
    return this.lifecycle.expire(options)
  }

  /**
   * Moves `name` to a compressed archive file beside the database and deletes
   * it from LevelDB; `open` brings it back transparently. A replica of it held
   * open stops being persisted (open it again after).
   */
  archive(name: string, options: SignalOptions = {}): Promise<string> {
    return this.archival.archive(name, options)
  }

  /** Archives every name untouched for `archive.afterMs` (and not among the recently used names in memory). */
  archiveCold(options: SignalOptions = {}): Promise<string[]> {
    return this.archival.archiveCold(options)
  }

  /**
   * Garbage collection: deletes records older than each name's retained
   * range, checkpoints no longer listed, and keys of names that no longer
   * exist (left over from an interrupted deletion).
   */
  gc(options: SignalOptions = {}): Promise<GcReport> {
    return this.lifecycle.gc(options)
  }

  /**
   * Applies `name`'s time-window retention now (`{ archiveAfterMs }` moves
   * the records older than the window and before a checkpoint to the
   * archive tier, `{ deleteAfterMs }` deletes them; the sweep does this for
   * every hydrated name). Resolves with the records moved or deleted.
   */
  applyRetention(name: string, options: SignalOptions = {}): Promise<RetentionReport> {
    return this.lifecycle.applyRetention(name, options)
  }

  /** One background sweep: timed checkpoints, time-window retention of hydrated names, TTL expiry, archival of cold names. */
  sweep(options: SignalOptions = {}): Promise<void> {
    return this.lifecycle.sweep(options)
  }
}
