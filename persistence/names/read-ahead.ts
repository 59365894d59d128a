/**
 * Read-ahead for names hydrated one after another in key order (a cold
 * start reading every name, a listing walked in order): instead of a
 * metadata get, a checkpoint get and a log iterator per name (three
 * storage round trips; ~27% of opening 10,000 small documents, issue 19),
 * one range scan per kind (`m /`, `c /`, `l /`) from the name being
 * hydrated on reads the next names' keys too, and their hydrations are
 * served from it.
 *
 * It starts once {@link STREAK} hydrations in a row each came after the
 * previous one in name order (random access never pays for a scan it does
 * not use) and holds at most {@link PAGE} entries of each kind. What it
 * holds is what the storage held when the scan ran: every batch the commit
 * pipeline writes drops the names it touches (before it is written), and a
 * scan that overlapped a batch keeps nothing. Each entry is served once.
 * A name's records are served only when the scan saw all of them (the last
 * name of a full page may be cut short: it is left out).
 */
import type { RangeOptions, SignalOptions, Storage, StorageEntry, StorageKey, StorageOperation } from '../storage/storage.ts'

/** Entries of each kind one scan reads. */
export const PAGE = 256
/** Hydrations in increasing name order before the read-ahead starts. */
export const STREAK = 3

/** What hydration reads of a name: its checkpoints (`get`) and its log (`iterate`). */
export type NameReader = Pick<Storage, 'get' | 'iterate'>

type Kind = 'm' | 'c' | 'l'

/** @internal the owner's read-ahead (persistence/names/owner.ts). */
export class ReadAhead {
  /** Metadata bytes by name. */
  private readonly metas = new Map<string, Uint8Array>()
  /** Checkpoint values by name, then seq key. */
  private readonly checkpoints = new Map<string, Map<string, Uint8Array>>()
  /** Every log entry of a name, in key order, for names the scan saw whole. */
  private readonly logs = new Map<string, StorageEntry[]>()
  /** Bumped by every write that touches names (at its start and end). */
  private generation = 0
  private writing = 0
  private previous: string | undefined
  private streak = 0
  /** Entries served from scans (for tests and benchmarks). */
  hits = 0

  constructor(private readonly storage: Storage) {}

  /** A batch is about to be written: names it touches are dropped. Call {@link afterWrite} once it settled. */
  beforeWrite(ops: readonly StorageOperation[]): void {
    this.writing++
    this.generation++
    if (this.metas.size === 0 && this.checkpoints.size === 0 && this.logs.size === 0) return
    for (const op of ops) {
      const [kind, name] = op.key
      if (name === undefined) continue
      if (kind === 'm') this.metas.delete(name)
      else if (kind === 'c') this.checkpoints.delete(name)
      else if (kind === 'l') this.logs.delete(name)
    }
  }

  /** The batch announced by {@link beforeWrite} settled (written or failed). */
  afterWrite(): void {
    this.writing--
    this.generation++
  }

  /** Forgets everything held (on close). */
  clear(): void {
    this.metas.clear()
    this.checkpoints.clear()
    this.logs.clear()
    this.previous = undefined
    this.streak = 0
  }

  /** Notes that `name` is being hydrated (the order the read-ahead follows). */
  hydrating(name: string): void {
    this.streak = this.previous !== undefined && name > this.previous ? this.streak + 1 : 0
    this.previous = name
  }

  private get sequential(): boolean {
    return this.streak >= STREAK
  }

  /** The stored metadata bytes of `name` (undefined: not stored). */
  async meta(name: string, options: SignalOptions = {}): Promise<Uint8Array | undefined> {
    let bytes = this.take(this.metas, name)
    if (bytes === undefined && this.sequential && !this.metas.has(name)) {
      await this.scan('m', name, options.signal)
      bytes = this.take(this.metas, name)
    }
    if (bytes !== undefined) return bytes
    return this.storage.get(['m', name], options)
  }

  private take<T>(map: Map<string, T>, name: string): T | undefined {
    const value = map.get(name)
    if (value !== undefined) {
      map.delete(name)
      this.hits++
    }
    return value
  }

  /** Reads for the hydration of `name`: its checkpoints and log, from a scan where one holds them. */
  reader(name: string): NameReader {
    const readAhead = this
    // Methods, not arrows: under tsx (esbuild keepNames) an arrow named by its property costs a defineProperty per hydration.
    return {
      get(key: StorageKey, options?: SignalOptions) {
        return readAhead.checkpoint(name, key, options)
      },
      iterate(range: RangeOptions) {
        return readAhead.log(name, range)
      },
    }
  }

  private async checkpoint(name: string, key: StorageKey, options: SignalOptions | undefined): Promise<Uint8Array | undefined> {
    if (key.length === 3 && key[0] === 'c' && key[1] === name) {
      let held = this.checkpoints.get(name)
      if (held === undefined && this.sequential) {
        await this.scan('c', name, options?.signal)
        held = this.checkpoints.get(name)
      }
      const value = held?.get(key[2])
      if (value !== undefined) {
        held!.delete(key[2])
        if (held!.size === 0) this.checkpoints.delete(name)
        this.hits++
        return value
      }
    }
    return this.storage.get(key, options)
  }

  private async *log(name: string, range: RangeOptions): AsyncIterable<StorageEntry> {
    const plain =
      range.prefix.length === 2 &&
      range.prefix[0] === 'l' &&
      range.prefix[1] === name &&
      range.gte === undefined &&
      range.lt === undefined &&
      range.lte === undefined &&
      range.reverse !== true &&
      range.limit === undefined
    let entries = plain ? this.take(this.logs, name) : undefined
    if (plain && entries === undefined && this.sequential) {
      await this.scan('l', name, range.signal)
      entries = this.take(this.logs, name)
    }
    if (entries === undefined) {
      yield* this.storage.iterate(range)
      return
    }
    const after = range.gt?.[2]
    for (const entry of entries) if (after === undefined || (entry.key[2] ?? '') > after) yield entry
  }

  /** Reads up to {@link PAGE} entries of `kind` from `name` on; kept only if no write overlapped the scan. */
  private async scan(kind: Kind, name: string, signal: AbortSignal | undefined): Promise<void> {
    if (this.writing > 0) return
    const generation = this.generation
    const byName = new Map<string, StorageEntry[]>()
    let count = 0
    for await (const entry of this.storage.iterate({ prefix: [kind], gte: [kind, name], limit: PAGE, signal })) {
      const owner = entry.key[1]
      if (owner === undefined || entry.key.length !== (kind === 'm' ? 2 : 3)) continue
      let list = byName.get(owner)
      if (!list) byName.set(owner, (list = []))
      list.push(entry)
      count++
    }
    if (this.generation !== generation || this.writing > 0) return
    // A full page may end inside a name's keys: that name is left out.
    if (count >= PAGE && kind !== 'm') {
      const last = [...byName.keys()].at(-1)
      if (last !== undefined) byName.delete(last)
    }
    // What an earlier scan of this kind left unused goes: at most one page of each kind is held.
    if (kind === 'm') this.metas.clear()
    else if (kind === 'c') this.checkpoints.clear()
    else this.logs.clear()
    for (const [owner, entries] of byName) {
      if (kind === 'm') this.metas.set(owner, entries[0].value)
      else if (kind === 'c') this.checkpoints.set(owner, new Map(entries.map((entry) => [entry.key[2], entry.value])))
      else this.logs.set(owner, entries)
    }
  }
}
