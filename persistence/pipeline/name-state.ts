/**
 * The pipeline's view of one name: its log tail as the last batch left it
 * (the metadata in memory: seq and hash of the newest record, what is on
 * stable storage) and the units under way. Only the commit pipeline changes
 * it (committer.ts); everything else about a name is its entry's
 * (persistence/names/entry.ts).
 */
import type { NameMeta } from '../format/name-meta.ts'

/** How a name's state starts (see {@link NameState}). */
export interface NameStateOptions {
  /** The stored metadata lags `meta` (records were appended after it was written). */
  readonly metaBehind?: boolean
  /** The name is not stored yet: the first batch that touches it writes its metadata too. */
  readonly unborn?: boolean
}

/** What gives the state digest of a name's replica now (its entry). */
export interface StateDigester {
  digest(): Uint8Array
}

/** The live state of one name, shared by its entry and the pipeline. */
export class NameState {
  private current: NameMeta
  private durable: number
  private units = 0
  private behind: boolean
  private notStored: boolean

  /** `meta`: the log's tail as it is on storage (every record up to it is durable). */
  constructor(meta: NameMeta, options: NameStateOptions = {}) {
    this.current = meta
    this.durable = meta.lastSeq
    this.behind = options.metaBehind ?? false
    this.notStored = options.unborn ?? false
  }

  /** The metadata as last written (committed): `lastSeq` is the newest record written. */
  get meta(): NameMeta {
    return this.current
  }

  /** Highest seq known to be on stable storage. */
  get durableSeq(): number {
    return this.durable
  }

  /** Units queued or in flight that touch this name. */
  get pending(): number {
    return this.units
  }

  /** The stored metadata lags {@link meta} (records were appended since it was last written). */
  get metaBehind(): boolean {
    return this.behind
  }

  /**
   * The name is not stored yet (created in memory): the first batch that
   * touches it writes its metadata too, so a name is created together with
   * its first records (an import killed midway leaves no empty names).
   */
  get unborn(): boolean {
    return this.notStored
  }

  /**
   * The state digest of the name's replica now (set by its entry once
   * hydrated). The pipeline stores it with metadata written by a batch that
   * holds every unit queued for the name, so that it describes the state at
   * the metadata's `lastSeq`.
   */
  digester: StateDigester | undefined

  /**
   * The name was created by `openMany` (stored empty, its metadata alone):
   * the batch of its first record writes its metadata (with the digest)
   * instead of a tail marker, so that the name needs no metadata write of
   * its own before it leaves memory (FORMAT.md, "tail marker").
   */
  metaWithFirstRecord = false

  /** @internal a unit touching the name was queued (or joined). */
  entered(): void {
    this.units++
  }

  /** @internal a unit touching the name was written or refused. */
  left(): void {
    this.units--
  }

  /** @internal a batch was written: the name's metadata is now `meta`, stored with it when `stored`. */
  written(meta: NameMeta, stored: boolean): void {
    this.current = meta
    this.behind = !stored
    if (stored) this.notStored = false
  }

  /** @internal everything written is on stable storage; true when the durable seq moved. */
  synced(): boolean {
    if (this.durable === this.current.lastSeq) return false
    this.durable = this.current.lastSeq
    return true
  }
}
