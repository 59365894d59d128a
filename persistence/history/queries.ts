/**
 * The history queries a door shows (CLI, MCP, inspector): a filtered, paged
 * `history` (by author, time, cursor), `diff` between two records as
 * structured data per type with who made the changes, and `blame` of what
 * a name holds now (persistence/history/blame.ts). Read-only; every result
 * is bounded (QUERY_LIMITS).
 */
import { signatureOf } from '../signing.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import { decodeRecord, type StoredRecord } from '../format/record.ts'
import { type ScannedRecord, withChainHashes } from './chain-hashes.ts'
import { logEntries } from '../lifecycle/log-archive.ts'
import type { Names } from '../names/owner.ts'
import type { SignalOptions } from '../storage/storage.ts'
import { type HistoryEntry, toHistoryEntry } from '../store-types.ts'
import { blame, type BlameReport } from './blame.ts'
import { type Changes, changesBetween } from './diff.ts'
import { QUERY_LIMITS } from './json-values.ts'
import type { TimeTravel } from './time-travel.ts'

/** Records one {@link Queries.historyPage} call reads at most, or its `limit` if larger (a filter that matches few ends the page early, with a cursor). */
export const MAX_HISTORY_SCAN = 10_000
/** Largest `limit` of a history page. */
export const MAX_HISTORY_PAGE = 100_000

/** A history query: filters and paging. */
export interface HistoryQuery extends SignalOptions {
  /** Only records by this author. */
  readonly agent?: string | undefined
  /** Only changes made at or after this wall time (ms since the epoch: the author's HLC wall, `authored ?? hlc`). */
  readonly since?: number | undefined
  /** Only records at or before this wall time (ms). */
  readonly until?: number | undefined
  /** Records per page (default 100, at most {@link MAX_HISTORY_PAGE}). */
  readonly limit?: number | undefined
  /** Newest first. */
  readonly reverse?: boolean | undefined
  /** Start at this seq (inclusive; default: the first, or the last when `reverse`). */
  readonly from?: number | undefined
  /** Where the previous page stopped (its `cursor`); replaces `from` and `reverse`. */
  readonly cursor?: string | undefined
}

/** A page of history. */
export interface HistoryPage {
  readonly entries: HistoryEntry[]
  /** Give it as `cursor` for the next page; absent when the log is exhausted. */
  readonly cursor?: string
}

/** A record as a diff lists it. */
export interface ChangeAuthor {
  readonly seq: number
  readonly agent: string
  /** ISO time (the record's HLC wall). */
  readonly at: string
  readonly message?: string
}

/** What changed between two records, and who changed it. */
export interface DiffReport {
  readonly name: string
  readonly type: ReplicaType
  readonly from: number
  readonly to: number
  readonly changes: Changes
  /** Counters: the change of the value per author over the records `from+1..to`. */
  readonly byAgent?: Array<{ readonly agent: string; readonly delta: number; readonly records: number }>
  /** Maps and Automerge documents: the top-level keys the changes touch. */
  readonly changedKeys?: string[]
  /** The records `from+1..to`, oldest first (at most {@link QUERY_LIMITS.maxItems}). */
  readonly records: ChangeAuthor[]
  /** True when there were more records than listed. */
  readonly truncated?: boolean
}

function invalid(message: string): ConcordError {
  return new ConcordError(ErrorCodes.INVALID_ARGUMENT, message)
}

function parseCursor(cursor: string): { from: number; reverse: boolean } {
  const match = /^([fr])([1-9][0-9]{0,15})$/.exec(cursor)
  if (!match) throw invalid(`cursor "${cursor.slice(0, 40)}" is not one a history page gave`)
  return { from: Number(match[2]), reverse: match[1] === 'r' }
}

function checkTime(value: unknown, what: string): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value))) throw invalid(`${what} must be a time in ms`)
}

/** @internal history pages, diff, blame. */
export class Queries {
  constructor(
    private readonly context: StoreContext,
    private readonly names: Names,
    private readonly timeTravel: TimeTravel,
  ) {}

  /** A page of `name`'s records matching the query (see {@link HistoryQuery}). */
  async historyPage(name: string, query: HistoryQuery = {}): Promise<HistoryPage> {
    this.context.checkOpen()
    const limit = query.limit ?? 100
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_HISTORY_PAGE) throw invalid(`limit must be 1..${MAX_HISTORY_PAGE}`)
    const maxScan = Math.max(MAX_HISTORY_SCAN, limit)
    checkTime(query.since, 'since')
    checkTime(query.until, 'until')
    if (query.agent !== undefined && typeof query.agent !== 'string') throw invalid('agent must be a string')
    const position = query.cursor !== undefined ? parseCursor(query.cursor) : { from: query.from, reverse: query.reverse ?? false }
    const meta = await this.names.meta(name, { signal: query.signal, mustExist: true })
    const range = position.reverse
      ? { from: 1, to: Math.min(position.from ?? meta.lastSeq, meta.lastSeq), reverse: true, signal: query.signal }
      : { from: position.from ?? 1, to: meta.lastSeq, signal: query.signal }
    const scanned: ScannedRecord[] = []
    const matching: number[] = []
    let next: number | undefined
    for await (const entry of logEntries(this.context, meta, range)) {
      if (matching.length >= limit || scanned.length >= maxScan) {
        next = entry.seq
        break
      }
      const record = decodeRecord(entry.value, { name, seq: entry.seq })
      if (record.name !== name || record.seq !== entry.seq)
        throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": record under seq ${entry.seq} is misplaced`)
      scanned.push({ seq: entry.seq, value: entry.value, record })
      if (query.agent !== undefined && record.agent !== query.agent) continue
      const made = (record.authored ?? record.hlc).wall
      if (query.since !== undefined && made < query.since) continue
      if (query.until !== undefined && made > query.until) continue
      matching.push(entry.seq)
    }
    // Hashes of version 4 records come from the chain (persistence/history/chain-hashes.ts).
    const hashed = matching.length > 0 ? await withChainHashes(this.context, meta, scanned, query.signal) : new Map<number, StoredRecord>()
    const entries: HistoryEntry[] = matching.map((seq) => {
      const record = hashed.get(seq)!
      return toHistoryEntry({ ...record }, signatureOf(this.context.signatures, record, meta.type))
    })
    return next === undefined ? { entries } : { entries, cursor: `${position.reverse ? 'r' : 'f'}${next}` }
  }

  /**
   * What changed in `name` from right after record `fromSeq` to right after
   * `toSeq` (default: the last record), structured per type (see
   * persistence/history/diff.ts), with the records in between and, for a
   * counter, each author's part of the change.
   */
  async diff(name: string, fromSeq: number, toSeq?: number, options: SignalOptions = {}): Promise<DiffReport> {
    this.context.checkOpen()
    const meta = await this.names.meta(name, { signal: options.signal, mustExist: true })
    const to = toSeq ?? meta.lastSeq
    if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(to) || fromSeq < 0 || to > meta.lastSeq || fromSeq > to) {
      throw invalid(`"${name}": a diff needs 0 <= from <= to <= ${meta.lastSeq}, got ${fromSeq}..${to}`)
    }
    const before = await this.timeTravel.at(name, fromSeq, options)
    const after = await this.timeTravel.at(name, to, options)
    const changes = changesBetween(meta.type, before, after)
    const records: ChangeAuthor[] = []
    let truncated = false
    const counter = meta.type === 'gcounter' || meta.type === 'pncounter'
    const byAgent = new Map<string, { delta: number; records: number }>()
    // A counter's part per author: replay the records on the state before them (bounded like blame).
    const replay = counter && to - fromSeq <= QUERY_LIMITS.maxBlameRecords ? before : undefined
    let previous = replay ? (replay.value() as number) : 0
    for await (const entry of logEntries(this.context, meta, { from: fromSeq + 1, to, signal: options.signal })) {
      const record = decodeRecord(entry.value, { name, seq: entry.seq })
      if (records.length < QUERY_LIMITS.maxItems) {
        records.push({
          seq: record.seq,
          agent: record.agent,
          at: new Date((record.authored ?? record.hlc).wall).toISOString(),
          ...(record.message !== undefined ? { message: record.message } : {}),
        })
      } else truncated = true
      if (replay) {
        replay.applyDelta(record.delta)
        const now = replay.value() as number
        const part = byAgent.get(record.agent) ?? { delta: 0, records: 0 }
        part.delta += now - previous
        part.records++
        byAgent.set(record.agent, part)
        previous = now
      } else if (!counter && truncated) break
    }
    const report: DiffReport = { name, type: meta.type, from: fromSeq, to, changes, records, ...(truncated ? { truncated } : {}) }
    if (replay) {
      return {
        ...report,
        byAgent: [...byAgent].map(([agent, part]) => ({ agent, ...part })).sort((a, b) => (a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0)),
      }
    }
    if (changes.kind === 'json') {
      const keys = new Set<string>()
      for (const op of changes.patch as Array<{ path?: string }>) {
        const first = (op.path ?? '').split('/')[1]
        if (first !== undefined) keys.add(first.replace(/~1/g, '/').replace(/~0/g, '~'))
      }
      return { ...report, changedKeys: [...keys].sort() }
    }
    return report
  }

  /** Who wrote what `name` holds now (persistence/history/blame.ts): the newest `limit` records (default 500) replayed. */
  async blame(name: string, options: { field?: string; limit?: number } & SignalOptions = {}): Promise<BlameReport> {
    this.context.checkOpen()
    const entry = await this.names.entry(name, undefined, { mustExist: true, signal: options.signal })
    return blame({ history: (n, o) => this.timeTravel.history(n, o), at: (n, seq) => this.timeTravel.at(n, seq) }, name, entry.replica, {
      field: options.field,
      limit: options.limit,
    })
  }
}
