/**
 * Opens the storage of a store in a browser: IndexedDB for a `dir` (the
 * database's name), memory-level without one. Same exports as
 * persistence/storage/level/open-level-storage.ts, which a bundler building for
 * the browser replaces with this module (package.json `browser`).
 */
import { MemoryLevel } from 'memory-level'
import type { SignalOptions } from '../storage/storage.ts'
import { LevelStorage, type BytesLevel } from '../storage/level/level-storage.ts'
import { throwIfAborted } from '../storage/storage.ts'
import { openIndexedDbStorage } from './indexeddb-storage.ts'

/** Options of {@link openLevelStorage}. */
export interface LevelStorageOptions extends SignalOptions {
  /** In a browser: the IndexedDB database's name; omitted -> in memory (memory-level). */
  readonly dir?: string | undefined
}

/** Opens IndexedDB database `dir`, or memory-level without one. */
export async function openLevelStorage(options: LevelStorageOptions = {}): Promise<LevelStorage> {
  throwIfAborted(options.signal)
  if (options.dir !== undefined) return openIndexedDbStorage({ database: options.dir, signal: options.signal })
  const db = new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' })
  return new LevelStorage(db as unknown as BytesLevel, 'memory-level').open()
}
