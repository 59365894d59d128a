/**
 * Archival of cold names: `archive(name)` moves every key of a name to a
 * compressed file beside the database (format in persistence/format/
 * archive.ts, files in archive-files.ts) and leaves a marker; hydration
 * calls `rehydrate(name)` to bring it back transparently.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import { archiveKey, checkpointPrefix, logPrefix, metaKey, tailKey } from '../format/keys.ts'
import { segmentIndexKey } from '../format/segments.ts'
import type { Names } from '../names/owner.ts'
import type { SignalOptions, StorageOperation } from '../storage/storage.ts'
import { checkpointUnit } from '../writes/checkpoints.ts'
import { readArchive, writeArchive } from './archive-files.ts'
import { collect } from './lifecycle.ts'
import { archiveDirOf } from './log-archive.ts'

/** @internal archival and rehydration of names. */
export class Archival {
  constructor(
    private readonly context: StoreContext,
    private readonly owner: Names,
  ) {}

  private archiveDir(): string {
    const dir = archiveDirOf(this.context.options)
    if (!dir) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'archival needs `archive.dir` (or a store `dir`)')
    return dir
  }

  /** Moves `name` to an archive file; returns the file name. */
  async archive(name: string, options: SignalOptions = {}): Promise<string> {
    const { context, owner } = this
    context.checkOpen()
    const dir = this.archiveDir()
    const live = owner.live(name)
    if (live) {
      await context.committer.enqueue(checkpointUnit(context, live))
      owner.detach(name)
    }
    await context.committer.idle()
    const meta = await owner.meta(name, { signal: options.signal })
    if (!meta) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
    const entries: Array<{ key: readonly string[]; value: Uint8Array }> = [{ key: metaKey(name), value: (await context.storage.get(metaKey(name)))! }]
    const tail = await context.storage.get(tailKey(name))
    if (tail) entries.push({ key: tailKey(name), value: tail })
    // The segment index of its archive tier (the segment files stay where they are).
    const segments = await context.storage.get(segmentIndexKey(name))
    if (segments) entries.push({ key: segmentIndexKey(name), value: segments })
    for (const prefix of [logPrefix(name), checkpointPrefix(name)]) {
      for await (const entry of context.storage.iterate({ prefix, signal: options.signal })) entries.push(entry)
    }
    const { file, marker } = await writeArchive(dir, meta, entries, context.now())
    const ops: StorageOperation[] = entries.map((entry) => ({ type: 'del', key: entry.key }))
    await context.committer.enqueue({
      sync: true,
      states: [],
      build: (b) => {
        for (const op of ops) b.del(op.key)
        b.put(archiveKey(name), marker)
      },
    })
    owner.remove(name)
    owner.noteArchived(name)
    context.ttlNames.forget(name)
    context.events.emit('archived', { name, file })
    return file
  }

  /** Archives every name untouched for `archive.afterMs` and not among the recently used names. */
  async archiveCold(options: SignalOptions = {}): Promise<string[]> {
    const { context, owner } = this
    context.checkOpen()
    const after = context.options.archive?.afterMs ?? 0
    if (after <= 0) return []
    const now = context.now()
    const done: string[] = []
    // Candidates by their metadata as written; the newest record decides (the stored metadata may lag the log).
    const candidates = await collect(owner.metas({ signal: options.signal, where: (written) => now - written.touched >= after && !owner.busy(written.name) }))
    for (const meta of candidates) {
      if (now - meta.touched < after || owner.busy(meta.name)) continue
      await this.archive(meta.name, options)
      done.push(meta.name)
    }
    return done
  }

  /** Brings an archived name back into the database; false if it is not archived. */
  async rehydrate(name: string, signal?: AbortSignal): Promise<boolean> {
    const { context } = this
    const marker = await this.owner.marker(name, { signal })
    if (!marker) return false
    const { entries, remove } = await readArchive(this.archiveDir(), marker)
    await context.committer.enqueue({
      sync: true,
      states: [],
      build: (b) => {
        for (const entry of entries) b.put(entry.key, entry.value)
        b.del(archiveKey(name))
      },
    })
    // Its metadata came back past the pipeline's metadata path: the TTL names are learnt again.
    context.ttlNames.unknown()
    this.owner.noteRehydrated(name)
    await remove()
    context.events.emit('rehydrated', { name })
    return true
  }
}
