/**
 * Hydration: a name is loaded on first use (newest checkpoint + replay of the
 * log after it, integrity-checked; a torn tail is truncated and reported;
 * an archived name is rehydrated first), its schema migrations run, its
 * replica's changes are wired to the write path, and it enters the bounded
 * cache. Concurrent opens of one name share one hydration.
 */
import { ConcordError, ErrorCodes, TypeMismatchError } from '../crdt/errors.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import { decodeArchiveMarker } from './format/archive.ts'
import type { Archival } from './archival.ts'
import type { NameState } from './committer.ts'
import { archiveKey, logKey, logPrefix } from './format/keys.ts'
import { newMeta } from './format/name-meta.ts'
import { DEFAULT_CHECKPOINT, DEFAULT_RETENTION, type NameOptions, type Schema } from './options.ts'
import { rebuild } from './replay.ts'
import type { SignalOptions, StorageOperation } from './storage/storage.ts'
import type { StoreCore } from './store-core.ts'
import type { Entry } from './store-types.ts'
import type { Writes } from './writes.ts'

/** @internal opening and hydrating names. */
export class Hydration {
  constructor(private readonly core: StoreCore, private readonly writes: Writes, private readonly archival: Archival) {}

  /** The type of a stored name, or undefined (archived names included). */
  async typeOf(name: string, options?: SignalOptions): Promise<ReplicaType | undefined> {
    const { core } = this
    const live = core.cache.live(name)
    if (live) return live.state.meta.type
    const meta = await core.readMeta(name, options?.signal)
    if (meta) return meta.type
    const marker = await core.storage.get(archiveKey(name), options)
    return marker ? decodeArchiveMarker(marker).type : undefined
  }

  /** The entry of `name` if it is hydrated (marked recently used), without waiting; `TypeMismatchError` if `type` differs. */
  hydrated(name: string, type: ReplicaType | undefined): Entry | undefined {
    const entry = this.core.cache.use(name)
    if (entry && type !== undefined && entry.state.meta.type !== type) throw new TypeMismatchError(name, type, entry.state.meta.type)
    return entry
  }

  /**
   * The entry of `name`, hydrating it if needed; `TypeMismatchError` if
   * `type` differs. A name it creates is stored at once, or with
   * `deferCreation` by the first batch that writes it (a commit: the name
   * and its first records are one batch).
   */
  async entry(name: string, type: ReplicaType | undefined, options: NameOptions, deferCreation = false): Promise<Entry> {
    const { cache } = this.core
    let entry = cache.use(name)
    if (!entry) {
      let pending = cache.opening.get(name)
      if (!pending) {
        pending = this.hydrate(name, type, options, deferCreation).finally(() => cache.opening.delete(name))
        cache.opening.set(name, pending)
      }
      entry = await pending
    }
    if (type !== undefined && entry.state.meta.type !== type) throw new TypeMismatchError(name, type, entry.state.meta.type)
    return entry
  }

  /** Stores a name created in memory and not written yet (its metadata alone), as `open` promises. */
  async create(entry: Entry): Promise<void> {
    const { state } = entry
    if (!state.unborn) return
    await this.core.committer.enqueue({
      sync: true, states: [state],
      build: (b) => { if (state.unborn) b.setMeta(state, b.meta(state)) },
    })
  }

  private async hydrate(name: string, type: ReplicaType | undefined, options: NameOptions, deferCreation: boolean): Promise<Entry> {
    const { core } = this
    let meta = await core.readMeta(name, options.signal)
    if (!meta) {
      if (await this.archival.rehydrate(name, options.signal)) meta = await core.readMeta(name, options.signal)
    }
    const schema = options.schema ?? core.options.schema ?? { version: 0 }
    let created = false
    if (!meta) {
      if (options.mustExist || type === undefined) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
      meta = newMeta(name, type, schema.version, core.now(), options.ttlMs ?? 0)
      created = true
    }
    if (type !== undefined && meta.type !== type) throw new TypeMismatchError(name, type, meta.type)
    if (meta.schema > schema.version) {
      throw new ConcordError(ErrorCodes.SCHEMA_TOO_NEW, `"${name}" was written with schema version ${meta.schema}; this code knows up to ${schema.version}`)
    }
    // A new name is stored by the first batch that writes it (with its first records).
    const state: NameState = { meta, durableSeq: meta.lastSeq, pending: 0, metaBehind: false, unborn: created }
    let replica: Replica
    if (created) {
      replica = core.newReplica(meta.type)
    } else {
      // The stored metadata may lag the log: replay to the end of the log and take its tail from there.
      const stored = meta
      const rebuilt = await rebuild({
        storage: core.storage, meta: stored, target: stored.lastSeq, toEnd: true, allowTornTail: true, signal: options.signal,
        create: (snapshot) => core.newReplica(stored.type, snapshot),
      })
      replica = rebuilt.replica
      if (rebuilt.seq !== stored.lastSeq) {
        state.meta = {
          ...stored, lastSeq: rebuilt.seq, lastHash: rebuilt.hash, logBytes: rebuilt.replayedBytes,
          touched: Math.max(stored.touched, rebuilt.hlc?.wall ?? 0),
        }
        state.durableSeq = rebuilt.seq
        state.metaBehind = true
      }
      if (rebuilt.torn) {
        await this.truncate(state, rebuilt.seq, rebuilt.hash, rebuilt.torn)
      }
    }
    const entry: Entry = {
      name, state, replica,
      durability: options.durability ?? core.options.durability ?? { mode: 'sync' },
      policy: { ...DEFAULT_CHECKPOINT, ...core.options.checkpoint, ...options.checkpoint },
      retention: options.retention ?? core.options.retention ?? DEFAULT_RETENTION,
      repairSince: undefined, checkpointQueued: false, dirtySince: 0, detached: false,
      unsubscribe: () => undefined, last: Promise.resolve(),
    }
    if (!created && state.meta.lastSeq > (state.meta.checkpoints.at(-1)?.seq ?? 0)) entry.dirtySince = core.now()
    const ttlChange = !created && options.ttlMs !== undefined && options.ttlMs !== state.meta.ttlMs
    if (ttlChange) {
      await core.committer.enqueue({
        sync: true, states: [state],
        build: (b) => b.setMeta(state, { ...b.meta(state), ttlMs: options.ttlMs ?? b.meta(state).ttlMs }),
      })
    }
    if (created && !deferCreation) await this.create(entry)
    entry.unsubscribe = replica.events.on('change', (event) => this.writes.onChange(entry, event))
    replica.guard = this.writes.guardOf(entry)
    if (state.meta.schema < schema.version) await this.migrate(entry, schema)
    core.cache.add(entry)
    return entry
  }

  private async truncate(state: NameState, seq: number, hash: Uint8Array, torn: { fromSeq: number; toSeq: number; reason: string }): Promise<void> {
    const { core } = this
    const name = state.meta.name
    // Delete every key from the damaged record on (including any beyond the metadata).
    const doomed: StorageOperation[] = []
    for await (const key of core.storage.keys({ prefix: logPrefix(name), gte: logKey(name, torn.fromSeq) })) doomed.push({ type: 'del', key })
    await core.committer.enqueue({
      sync: true, states: [state],
      build: (b) => {
        for (const op of doomed) b.del(op.key)
        const meta = b.meta(state)
        b.setMeta(state, {
          ...meta, lastSeq: seq, lastHash: hash, firstSeq: Math.min(meta.firstSeq, seq + 1),
          checkpoints: meta.checkpoints.filter((cp) => cp.seq <= seq),
        })
      },
    })
    state.durableSeq = seq
    const report = { name, fromSeq: torn.fromSeq, toSeq: torn.toSeq, reason: torn.reason }
    core.truncations.push(report)
    core.events.emit('truncated', report)
  }

  private async migrate(entry: Entry, schema: Schema): Promise<void> {
    const { core } = this
    const from = entry.state.meta.schema
    let items
    try {
      items = this.writes.capture(() => {
        for (let version = from + 1; version <= schema.version; version++) {
          const step = schema.migrations?.[version]
          if (!step) throw new ConcordError(ErrorCodes.MIGRATION_FAILED, `"${entry.name}": no migration to schema version ${version}`)
          try {
            step(entry.replica, { name: entry.name, from: version - 1, to: version })
          } catch (error) {
            throw new ConcordError(ErrorCodes.MIGRATION_FAILED, `"${entry.name}": migration to version ${version} failed: ${(error as Error)?.message}`, { cause: error })
          }
        }
      })
    } catch (error) {
      entry.unsubscribe()
      entry.detached = true
      throw error
    }
    await core.committer.enqueue({
      sync: entry.durability.mode === 'sync', states: [entry.state],
      build: (b) => {
        this.writes.buildAppends(b, items)
        b.setMeta(entry.state, { ...b.meta(entry.state), schema: schema.version })
      },
    })
    core.events.emit('migrated', { name: entry.name, from, to: schema.version })
  }
}
