/**
 * Lifecycle of names: listing, deletion, TTL expiry, garbage collection, and
 * the background sweep (timed checkpoints, TTL, archival of cold names).
 */
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import { decodeArchiveMarker, type ArchiveMarker } from './format/archive.ts'
import type { Archival } from './archival.ts'
import { ARCHIVE_PREFIX, archiveKey, checkpointPrefix, logPrefix, META_PREFIX, metaKey, parseSeqKey, TAIL_PREFIX, tailKey } from './format/keys.ts'
import { decodeMeta, type NameMeta } from './format/name-meta.ts'
import type { SignalOptions, StorageOperation } from './storage/storage.ts'
import type { StoreCore } from './store-core.ts'
import type { GcReport, NameInfo } from './store-types.ts'
import type { Writes } from './writes.ts'

/** @internal names, delete, TTL, GC, sweep. */
export class Lifecycle {
  private sweepTimer: unknown

  constructor(private readonly core: StoreCore, private readonly writes: Writes, private readonly archival: Archival) {}

  /** Every stored name (archived ones included), in name order. */
  async names(options: SignalOptions = {}): Promise<NameInfo[]> {
    const { core } = this
    core.checkOpen()
    await core.committer.idle()
    const out: NameInfo[] = []
    const stored: NameMeta[] = []
    for await (const entry of core.storage.iterate({ prefix: META_PREFIX, signal: options.signal })) {
      try {
        stored.push(decodeMeta(entry.value))
      } catch {
        continue
      }
    }
    const tails = await core.tailNames(options.signal)
    for (const written of stored) {
      const meta = await core.current(written, tails, options.signal)
      out.push({
        name: meta.name, type: meta.type, records: meta.lastSeq - meta.firstSeq + 1, lastSeq: meta.lastSeq,
        size: meta.logBytes + (meta.checkpoints.at(-1)?.size ?? 0), lastChange: meta.touched,
        checkpoints: meta.checkpoints.length, schema: meta.schema, archived: false,
      })
    }
    for await (const entry of core.storage.iterate({ prefix: ARCHIVE_PREFIX, signal: options.signal })) {
      let marker: ArchiveMarker
      try {
        marker = decodeArchiveMarker(entry.value)
      } catch {
        continue
      }
      out.push({
        name: marker.name, type: marker.type, records: marker.records, lastSeq: marker.lastSeq, size: marker.fileSize,
        lastChange: marker.touched, checkpoints: 0, schema: marker.schema, archived: true,
      })
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /** Deletes of every key of `name` (metadata, records, checkpoints), read once the pipeline is idle. */
  private async deleteOps(name: string, signal?: AbortSignal): Promise<StorageOperation[]> {
    const { core } = this
    await core.committer.idle()
    const ops: StorageOperation[] = [{ type: 'del', key: metaKey(name) }, { type: 'del', key: tailKey(name) }]
    for (const prefix of [logPrefix(name), checkpointPrefix(name)]) {
      for await (const key of core.storage.keys({ prefix, signal })) ops.push({ type: 'del', key })
    }
    return ops
  }

  /** Deletes `name` and all its data; false if it did not exist. */
  async delete(name: string, options: SignalOptions = {}): Promise<boolean> {
    const { core } = this
    core.checkOpen()
    await core.committer.idle()
    const meta = core.cache.live(name)?.state.meta ?? await core.readMeta(name, options.signal)
    const marker = await core.storage.get(archiveKey(name))
    if (!meta && !marker) return false
    core.cache.detach(name)
    const ops = meta ? await this.deleteOps(name, options.signal) : []
    if (marker) ops.push({ type: 'del', key: archiveKey(name) })
    await core.committer.enqueue({ sync: true, states: [], build: (b) => { for (const op of ops) b.del(op.key) } })
    return true
  }

  private ttlOf(meta: NameMeta): number {
    return meta.ttlMs > 0 ? meta.ttlMs : this.core.options.ttlMs ?? 0
  }

  /**
   * Expires every name untouched for its TTL and not recently used; returns
   * the names. `dryRun`: only returns them. `only`: considers these names only.
   */
  async expire(options: SignalOptions & { readonly dryRun?: boolean; readonly only?: readonly string[] } = {}): Promise<string[]> {
    const { core } = this
    core.checkOpen()
    const now = core.now()
    const expired: string[] = []
    const metas = await core.allMetas(options.signal)
    const tails = await core.tailNames(options.signal)
    const only = options.only === undefined ? undefined : new Set(options.only)
    for (const stored of metas) {
      if (only !== undefined && !only.has(stored.name)) continue
      const ttl = this.ttlOf(stored)
      if (ttl <= 0 || now - stored.touched < ttl || core.cache.busy(stored.name)) continue
      // The stored metadata may lag the log: the newest record decides.
      const meta = await core.current(stored, tails, options.signal)
      if (now - meta.touched < ttl || core.cache.busy(meta.name)) continue
      if (options.dryRun) {
        expired.push(meta.name)
        continue
      }
      core.cache.detach(meta.name)
      const ops = await this.deleteOps(meta.name, options.signal)
      await core.committer.enqueue({ sync: true, states: [], build: (b) => { for (const op of ops) b.del(op.key) } })
      expired.push(meta.name)
      core.events.emit('expired', { name: meta.name })
    }
    return expired
  }

  /** Deletes records outside each name's retained range, unlisted checkpoints, and keys of names that no longer exist. */
  async gc(options: SignalOptions = {}): Promise<GcReport> {
    const { core } = this
    core.checkOpen()
    await core.committer.idle()
    const metas = new Map((await core.allMetas(options.signal)).map((meta) => [meta.name, meta]))
    const archived = new Set<string>()
    for await (const key of core.storage.keys({ prefix: ARCHIVE_PREFIX, signal: options.signal })) archived.add(key[1])
    let deletedRecords = 0
    let deletedCheckpoints = 0
    const orphans = new Set<string>()
    let ops: StorageOperation[] = []
    const drain = async (): Promise<void> => {
      if (ops.length === 0) return
      const batch = ops
      ops = []
      await core.committer.enqueue({ sync: true, states: [], build: (b) => { for (const op of batch) b.del(op.key) } })
    }
    // Tail markers of names that no longer exist (left over from an interrupted deletion).
    for await (const key of core.storage.keys({ prefix: TAIL_PREFIX, signal: options.signal })) {
      if (!metas.has(key[1]) && !core.cache.live(key[1]) && !core.cache.opening.has(key[1])) ops.push({ type: 'del', key })
    }
    for (const kind of ['l', 'c'] as const) {
      for await (const key of core.storage.keys({ prefix: [kind], signal: options.signal })) {
        const name = key[1]
        const seq = parseSeqKey(key[2] ?? '')
        const meta = core.cache.live(name)?.state.meta ?? metas.get(name)
        let doomed: boolean
        if (!meta) {
          doomed = !archived.has(name) && !core.cache.opening.has(name)
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
    const { core } = this
    this.sweepTimer = core.timers.setTimeout(() => {
      if (core.isClosed) return
      this.sweep().catch((error) => {
        if (!core.isClosed) core.events.emit('error', { error: isConcordError(error) ? error : new ConcordError(ErrorCodes.STORAGE_ERROR, String(error)) })
      }).finally(() => {
        if (!core.isClosed) this.start(ms)
      })
    }, ms)
  }

  /** Stops the background sweep. */
  stop(): void {
    if (this.sweepTimer !== undefined) this.core.timers.clearTimeout(this.sweepTimer)
  }

  /** One sweep: timed checkpoints, TTL expiry, archival of cold names. */
  async sweep(options: SignalOptions = {}): Promise<void> {
    const { core } = this
    core.checkOpen()
    const now = core.now()
    for (const entry of core.cache.held()) {
      const every = entry.policy.everyMs
      if (every > 0 && entry.dirtySince > 0 && now - entry.dirtySince >= every && !entry.checkpointQueued) {
        await this.writes.queueCheckpoint(entry).catch(() => undefined)
      }
    }
    if ((core.options.ttlMs ?? 0) > 0 || (await this.anyNameTtl(options.signal))) await this.expire(options)
    if ((core.options.archive?.afterMs ?? 0) > 0) await this.archival.archiveCold(options)
  }

  private async anyNameTtl(signal?: AbortSignal): Promise<boolean> {
    for (const meta of await this.core.allMetas(signal)) if (meta.ttlMs > 0) return true
    return false
  }
}
