/**
 * Lifecycle of names: listing, deletion, TTL expiry, garbage collection, and
 * the background sweep (timed checkpoints, TTL, archival of cold names).
 */
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import {
  ARCHIVE_PREFIX,
  archiveKey,
  checkpointPrefix,
  compareCodePoints,
  jointKey,
  logPrefix,
  metaKey,
  parseSeqKey,
  TAIL_PREFIX,
  tailKey,
} from '../format/keys.ts'
import type { ArchiveMarker } from '../format/archive.ts'
import type { NameMeta } from '../format/name-meta.ts'
import { segmentIndexKey } from '../format/segments.ts'
import type { Names } from '../names/owner.ts'
import type { SignalOptions, StorageOperation } from '../storage/storage.ts'
import type { GcReport, NameInfo, NamePage, NamePageOptions } from '../store-types.ts'
import { queueCheckpoint } from '../writes/checkpoints.ts'
import type { Archival } from './archival.ts'
import { applyRetention, deleteSegments, type RetentionReport } from './log-archive.ts'

/** Names per page of {@link Lifecycle.page} by default, and at most. */
export const DEFAULT_PAGE_NAMES = 100
export const MAX_PAGE_NAMES = 10_000

/** The {@link NameInfo} of a stored name. */
function storedInfo(meta: NameMeta): NameInfo {
  return {
    name: meta.name,
    type: meta.type,
    records: meta.lastSeq - meta.firstSeq + 1,
    lastSeq: meta.lastSeq,
    size: meta.logBytes + (meta.checkpoints.at(-1)?.size ?? 0),
    lastChange: meta.touched,
    checkpoints: meta.checkpoints.length,
    schema: meta.schema,
    archived: false,
  }
}

/** The {@link NameInfo} of an archived name. */
function archivedInfo(marker: ArchiveMarker): NameInfo {
  return {
    name: marker.name,
    type: marker.type,
    records: marker.records,
    lastSeq: marker.lastSeq,
    size: marker.fileSize,
    lastChange: marker.touched,
    checkpoints: 0,
    schema: marker.schema,
    archived: true,
  }
}

/** Collects an async iterable into an array. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of items) out.push(item)
  return out
}

/** @internal names, delete, TTL, GC, sweep. */
export class Lifecycle {
  private sweepTimer: unknown

  constructor(
    private readonly context: StoreContext,
    private readonly owner: Names,
    private readonly archival: Archival,
  ) {}

  /** Every stored name (archived ones included), in name order. */
  async list(options: SignalOptions = {}): Promise<NameInfo[]> {
    this.context.checkOpen()
    const out: NameInfo[] = []
    for await (const meta of this.owner.metas({ signal: options.signal })) out.push(storedInfo(meta))
    for await (const marker of this.owner.markers(options)) out.push(archivedInfo(marker))
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * One page of the stored names (archived ones included) in key order
   * (code points), those starting with `prefix` after `cursor` for which
   * `where` holds: reads about as many names as it returns, whatever the
   * store holds (see {@link NamePageOptions}).
   */
  async page(options: NamePageOptions = {}): Promise<NamePage> {
    this.context.checkOpen()
    const limit = options.limit ?? DEFAULT_PAGE_NAMES
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_NAMES) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `limit must be an integer from 1 to ${MAX_PAGE_NAMES}`)
    }
    const prefix = options.prefix ?? ''
    const range = { from: prefix, ...(options.cursor !== undefined ? { after: options.cursor } : {}), signal: options.signal }
    const stored = this.owner.metas(range)[Symbol.asyncIterator]()
    const archived = this.owner.markers(range)[Symbol.asyncIterator]()
    const next = async <T extends { readonly name: string }>(from: AsyncIterator<T>): Promise<T | undefined> => {
      const item = await from.next()
      return item.done || !item.value.name.startsWith(prefix) ? undefined : item.value
    }
    const names: NameInfo[] = []
    let more = false
    try {
      let meta = await next(stored)
      let marker = await next(archived)
      while (meta || marker) {
        let info: NameInfo
        if (meta && (!marker || compareCodePoints(meta.name, marker.name) <= 0)) {
          info = storedInfo(meta)
          meta = await next(stored)
        } else {
          info = archivedInfo(marker!)
          marker = await next(archived)
        }
        if (options.where && !options.where(info)) continue
        if (names.length === limit) {
          more = true
          break
        }
        names.push(info)
      }
    } finally {
      await Promise.all([stored.return?.(undefined), archived.return?.(undefined)])
    }
    return { names, cursor: more ? names.at(-1)!.name : undefined }
  }

  /** Deletes of every key of `name` (metadata, records, checkpoints), read once the pipeline is idle. */
  private async deleteOps(name: string, signal?: AbortSignal): Promise<StorageOperation[]> {
    const { context } = this
    await context.committer.idle()
    const ops: StorageOperation[] = [
      { type: 'del', key: metaKey(name) },
      { type: 'del', key: tailKey(name) },
      { type: 'del', key: segmentIndexKey(name) },
      { type: 'del', key: jointKey(name) },
    ]
    context.jointNames.forget(name)
    for (const prefix of [logPrefix(name), checkpointPrefix(name)]) {
      for await (const key of context.storage.keys({ prefix, signal })) ops.push({ type: 'del', key })
    }
    return ops
  }

  /** Deletes `name` and all its data; false if it did not exist. */
  async delete(name: string, options: SignalOptions = {}): Promise<boolean> {
    const { context, owner: names } = this
    context.checkOpen()
    await context.committer.idle()
    const stored = names.live(name) !== undefined || (await names.meta(name, { signal: options.signal, written: true })) !== undefined
    const marker = await names.marker(name)
    if (!stored && !marker) return false
    names.remove(name)
    const ops = stored ? await this.deleteOps(name, options.signal) : []
    if (stored) await deleteSegments(context, name)
    if (marker) ops.push({ type: 'del', key: archiveKey(name) })
    await context.committer.enqueue({
      sync: true,
      states: [],
      build: (b) => {
        for (const op of ops) b.del(op.key)
      },
    })
    context.ttlNames.forget(name)
    return true
  }

  private ttlOf(meta: NameMeta): number {
    return meta.ttlMs > 0 ? meta.ttlMs : (this.context.options.ttlMs ?? 0)
  }

  /**
   * Expires every name untouched for its TTL and not recently used; returns
   * the names. `dryRun`: only returns them. `only`: considers these names only.
   */
  async expire(options: SignalOptions & { readonly dryRun?: boolean; readonly only?: readonly string[] } = {}): Promise<string[]> {
    const { context, owner: names } = this
    context.checkOpen()
    const now = context.now()
    const expired: string[] = []
    const only = options.only === undefined ? undefined : new Set(options.only)
    // Candidates by their metadata as written; the newest record decides (the stored metadata may lag the log).
    const candidates = await collect(
      names.metas({
        signal: options.signal,
        where: (written) =>
          (only === undefined || only.has(written.name)) &&
          this.ttlOf(written) > 0 &&
          now - written.touched >= this.ttlOf(written) &&
          !names.busy(written.name),
      }),
    )
    for (const meta of candidates) {
      if (now - meta.touched < this.ttlOf(meta) || names.busy(meta.name)) continue
      if (options.dryRun) {
        expired.push(meta.name)
        continue
      }
      names.remove(meta.name)
      const ops = await this.deleteOps(meta.name, options.signal)
      await deleteSegments(context, meta.name)
      await context.committer.enqueue({
        sync: true,
        states: [],
        build: (b) => {
          for (const op of ops) b.del(op.key)
        },
      })
      context.ttlNames.forget(meta.name)
      expired.push(meta.name)
      context.events.emit('expired', { name: meta.name })
    }
    return expired
  }

  /** Deletes records outside each name's retained range, unlisted checkpoints, and keys of names that no longer exist. */
  async gc(options: SignalOptions = {}): Promise<GcReport> {
    const { context, owner: names } = this
    context.checkOpen()
    await context.committer.idle()
    const metas = new Map((await collect(names.metas({ signal: options.signal, written: true }))).map((meta) => [meta.name, meta]))
    const archived = new Set<string>()
    for await (const key of context.storage.keys({ prefix: ARCHIVE_PREFIX, signal: options.signal })) archived.add(key[1])
    let deletedRecords = 0
    let deletedCheckpoints = 0
    const orphans = new Set<string>()
    let ops: StorageOperation[] = []
    const drain = async (): Promise<void> => {
      if (ops.length === 0) return
      const batch = ops
      ops = []
      await context.committer.enqueue({
        sync: true,
        states: [],
        build: (b) => {
          for (const op of batch) b.del(op.key)
        },
      })
    }
    // Tail markers of names that no longer exist (left over from an interrupted deletion).
    for await (const key of context.storage.keys({ prefix: TAIL_PREFIX, signal: options.signal })) {
      if (!metas.has(key[1]) && !names.live(key[1]) && !names.hydrating(key[1])) ops.push({ type: 'del', key })
    }
    for (const kind of ['l', 'c'] as const) {
      for await (const key of context.storage.keys({ prefix: [kind], signal: options.signal })) {
        const name = key[1]
        const seq = parseSeqKey(key[2] ?? '')
        const meta = names.live(name)?.state.meta ?? metas.get(name)
        let doomed: boolean
        if (!meta) {
          doomed = !archived.has(name) && !names.hydrating(name)
          if (doomed) orphans.add(name)
        } else if (kind === 'l') {
          // Records after the stored metadata's lastSeq are the log tail, not garbage.
          doomed = Number.isNaN(seq) || seq < meta.firstSeq
        } else {
          doomed = Number.isNaN(seq) || !meta.checkpoints.some((cp) => cp.seq === seq)
        }
        if (!doomed) continue
        if (kind === 'l') deletedRecords++
        else deletedCheckpoints++
        ops.push({ type: 'del', key })
        if (ops.length >= 1000) await drain()
      }
    }
    await drain()
    return { deletedRecords, deletedCheckpoints, orphanNames: orphans.size }
  }

  /** Starts the background sweep every `ms`. */
  start(ms: number): void {
    const { context } = this
    this.sweepTimer = context.timers.setTimeout(() => {
      if (context.closed) return
      this.sweep()
        .catch((error) => {
          if (!context.closed)
            context.events.emit('error', { error: isConcordError(error) ? error : new ConcordError(ErrorCodes.STORAGE_ERROR, String(error)) })
        })
        .finally(() => {
          if (!context.closed) this.start(ms)
        })
    }, ms)
  }

  /** Stops the background sweep. */
  stop(): void {
    if (this.sweepTimer !== undefined) this.context.timers.clearTimeout(this.sweepTimer)
  }

  /** One sweep: timed checkpoints, TTL expiry, archival of cold names. */
  async sweep(options: SignalOptions = {}): Promise<void> {
    const { context, owner: names } = this
    context.checkOpen()
    const now = context.now()
    for (const entry of names.held()) {
      const every = entry.policy.everyMs
      if (
        every > 0 &&
        entry.dirtySince > 0 &&
        now - entry.dirtySince >= every &&
        !entry.checkpointQueued &&
        entry.state.meta.logBytes >= entry.policy.minBytes
      ) {
        await queueCheckpoint(context, entry).catch(() => undefined)
      }
    }
    for (const entry of [...names.held()]) {
      if (typeof entry.retention === 'object' && !('checkpoints' in entry.retention)) await this.retain(entry, options).catch(() => undefined)
    }
    if ((context.options.ttlMs ?? 0) > 0 || (await this.anyNameTtl(options.signal))) await this.expire(options)
    if ((context.options.archive?.afterMs ?? 0) > 0) await this.archival.archiveCold(options)
  }

  private readonly retaining = new Set<string>()

  /** Applies `name`'s time-window retention (persistence/lifecycle/log-archive.ts); one run per name at a time. */
  async applyRetention(name: string, options: SignalOptions = {}): Promise<RetentionReport> {
    this.context.checkOpen()
    const entry = await this.owner.entry(name, undefined, { mustExist: true, signal: options.signal })
    return this.retain(entry, options)
  }

  private async retain(entry: import('../names/entry.ts').NameEntry, options: SignalOptions): Promise<RetentionReport> {
    if (this.retaining.has(entry.name)) return { name: entry.name, archived: 0, deleted: 0 }
    this.retaining.add(entry.name)
    try {
      return await applyRetention(this.context, entry, options)
    } finally {
      this.retaining.delete(entry.name)
    }
  }

  /** Whether some name has a TTL of its own: one scan of the metadata per store lifetime, then kept by the pipeline (ttl-names.ts). */
  private anyNameTtl(signal?: AbortSignal): Promise<boolean> {
    return this.context.ttlNames.any(() => this.owner.metas({ signal, written: true }))
  }
}
