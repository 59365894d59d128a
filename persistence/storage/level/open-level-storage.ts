/**
 * Opens the storage of a store in Node: classic-level (LevelDB) in a
 * folder, memory-level without one. A bundler building for the browser
 * takes persistence/browser/open-level-storage.ts instead (package.json
 * `browser`), which opens IndexedDB.
 */
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { ConcordError, ErrorCodes, isConcordError } from '../../../crdt/errors.ts'
import type { SignalOptions } from '../storage.ts'
import { LevelStorage, type BytesLevel } from './level-storage.ts'
import { throwIfAborted } from '../storage.ts'
import { describeLockHolder, describeThisProcess } from './lock-holder.ts'

/** The messages of an error and of its causes, outermost first. */
function causeMessages(error: unknown): string[] {
  const messages: string[] = []
  for (let e = error as { message?: unknown; cause?: unknown } | undefined; e && messages.length < 8; e = e.cause as typeof e) {
    if (typeof e.message === 'string') messages.push(e.message)
  }
  return messages
}

/** Options of {@link openLevelStorage}. */
export interface LevelStorageOptions extends SignalOptions {
  /** LevelDB folder (classic-level); omitted -> in memory (memory-level). */
  readonly dir?: string | undefined
}

/**
 * The LevelDB options of a store's folder beside the encodings: 16 KiB
 * blocks instead of LevelDB's 4 KiB, so Snappy finds more of what a name's
 * records repeat (agent, time, the document's client id) and a block holds
 * more keys to share prefixes (issue 19, disk: W3's 10,000 small documents
 * 1.65 -> 1.57 MB once compacted). Blocks are read whole: a point read
 * decompresses up to 16 KiB.
 */
export const LEVEL_TABLE_OPTIONS = { blockSize: 16 * 1024 } as const

/** Opens classic-level in `dir`, or memory-level without one. */
export async function openLevelStorage(options: LevelStorageOptions = {}): Promise<LevelStorage> {
  throwIfAborted(options.signal)
  const db =
    options.dir === undefined
      ? new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' })
      : new ClassicLevel<Uint8Array, Uint8Array>(options.dir, { keyEncoding: 'view', valueEncoding: 'view', ...LEVEL_TABLE_OPTIONS })
  const kind = options.dir === undefined ? 'memory-level' : `classic-level:${options.dir}`
  try {
    return await new LevelStorage(db as unknown as BytesLevel, kind, options.dir).open()
  } catch (error) {
    if (options.dir === undefined || !isConcordError(error, ErrorCodes.LOCKED)) throw error
    // Say who holds it, so the user knows what to stop. LevelDB tells a lock
    // held in this process by its message (and, closing its descriptor of the
    // LOCK file, drops this process's record lock: /proc/locks no longer shows it).
    const inProcess = causeMessages(error).some((message) => /already held by process/.test(message))
    const holder = inProcess ? describeThisProcess() : await describeLockHolder(options.dir)
    throw new ConcordError(ErrorCodes.LOCKED, `the data folder ${options.dir} is held by ${holder}: stop it first, or work on a copy of the folder`, {
      cause: error,
    })
  }
}
