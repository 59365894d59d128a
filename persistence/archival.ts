/**
 * Archival of cold names: `archive(name)` moves every key of a name to a
 * compressed file beside the database (format in archive.ts) and leaves a
 * marker; hydration calls `rehydrate(name)` to bring it back transparently.
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { decodeArchiveMarker } from './format/archive.ts'
import { readArchive, writeArchive } from './lifecycle/archive-files.ts'
import { archiveKey, checkpointPrefix, logPrefix, metaKey, tailKey } from './format/keys.ts'
import type { SignalOptions, StorageOperation } from './storage/storage.ts'
import type { StoreCore } from './store-core.ts'
import type { Writes } from './writes.ts'

/** @internal archival and rehydration of names. */
export class Archival {
  constructor(private readonly core: StoreCore, private readonly writes: Writes) {}

  private archiveDir(): string {
    const { options } = this.core
    const dir = options.archive?.dir ?? (options.dir !== undefined ? `${options.dir}.archive` : undefined)
    if (!dir) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'archival needs `archive.dir` (or a store `dir`)')
    return dir
  }

  /** Moves `name` to an archive file; returns the file name. */
  async archive(name: string, options: SignalOptions = {}): Promise<string> {
    const { core } = this
    core.checkOpen()
    const dir = this.archiveDir()
    const live = core.cache.live(name)
    if (live) {
      await core.committer.enqueue(this.writes.checkpointUnit(live))
      core.cache.detach(name)
    }
    await core.committer.idle()
    const meta = await core.storedMeta(name, options.signal)
    if (!meta) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
    const entries: Array<{ key: readonly string[]; value: Uint8Array }> = [{ key: metaKey(name), value: (await core.storage.get(metaKey(name)))! }]
    const tail = await core.storage.get(tailKey(name))
    if (tail) entries.push({ key: tailKey(name), value: tail })
    for (const prefix of [logPrefix(name), checkpointPrefix(name)]) {
      for await (const entry of core.storage.iterate({ prefix, signal: options.signal })) entries.push(entry)
    }
    const { file, marker } = await writeArchive(dir, meta, entries, core.now())
    const ops: StorageOperation[] = entries.map((entry) => ({ type: 'del', key: entry.key }))
    await core.committer.enqueue({
      sync: true, states: [],
      build: (b) => {
        for (const op of ops) b.del(op.key)
        b.put(archiveKey(name), marker)
      },
    })
    core.events.emit('archived', { name, file })
    return file
  }

  /** Archives every name untouched for `archive.afterMs` and not among the recently used names. */
  async archiveCold(options: SignalOptions = {}): Promise<string[]> {
    const { core } = this
    core.checkOpen()
    const after = core.options.archive?.afterMs ?? 0
    if (after <= 0) return []
    const now = core.now()
    const done: string[] = []
    const metas = await core.allMetas(options.signal)
    const tails = await core.tailNames(options.signal)
    for (const stored of metas) {
      if (now - stored.touched < after || core.cache.busy(stored.name)) continue
      // The stored metadata may lag the log: the newest record decides.
      const meta = await core.current(stored, tails, options.signal)
      if (now - meta.touched < after || core.cache.busy(meta.name)) continue
      await this.archive(meta.name, options)
      done.push(meta.name)
    }
    return done
  }

  /** Brings an archived name back into the database; false if it is not archived. */
  async rehydrate(name: string, signal?: AbortSignal): Promise<boolean> {
    const { core } = this
    const markerBytes = await core.storage.get(archiveKey(name), { signal })
    if (!markerBytes) return false
    const marker = decodeArchiveMarker(markerBytes)
    const { entries, remove } = await readArchive(this.archiveDir(), marker)
    await core.committer.enqueue({
      sync: true, states: [],
      build: (b) => {
        for (const entry of entries) b.put(entry.key, entry.value)
        b.del(archiveKey(name))
      },
    })
    await remove()
    core.events.emit('rehydrated', { name })
    return true
  }
}
