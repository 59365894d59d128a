/**
 * The {@link Storage} of a browser peer: IndexedDB through browser-level
 * (with per-write durability and snapshot iteration, indexeddb-level.ts)
 * behind the abstract-level adapter every store uses, and an exclusive Web
 * Lock so that one tab at a time writes a database (web-lock.ts).
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { LevelStorage, type BytesLevel } from '../storage/level/level-storage.ts'
import { throwIfAborted } from '../storage/storage.ts'
import type { SignalOptions } from '../storage/storage.ts'
import { DurableBrowserLevel } from './indexeddb-level.ts'
import { acquireWebLock } from './web-lock.ts'

/** Prefix of the IndexedDB database names Concord creates (`concord:<database>`; DevTools shows them so). */
export const INDEXEDDB_PREFIX = 'concord:'

/** Options of {@link openIndexedDbStorage}. */
export interface IndexedDbStorageOptions extends SignalOptions {
  /** The database's name (IndexedDB `concord:<database>`, one object store of that name). */
  readonly database: string
  /** How long to wait for another tab's lock on the database before `CONCORD_LOCKED` (default 3 000 ms). */
  readonly lockWaitMs?: number | undefined
}

/** Default of {@link IndexedDbStorageOptions.lockWaitMs}. */
export const DEFAULT_LOCK_WAIT_MS = 3_000

/** A {@link LevelStorage} over IndexedDB that lets go of its tab lock when closed. */
export class IndexedDbStorage extends LevelStorage {
  constructor(
    db: BytesLevel,
    kind: string,
    private readonly release: () => void,
    /** Whether a Web Lock keeps other tabs out. */ readonly locked: boolean,
  ) {
    super(db, kind)
  }

  override async close(): Promise<void> {
    try {
      await super.close()
    } finally {
      this.release()
    }
  }
}

function hasIndexedDb(): boolean {
  return typeof (globalThis as { indexedDB?: unknown }).indexedDB === 'object' && (globalThis as { indexedDB?: unknown }).indexedDB !== null
}

/**
 * Opens (creating it if new) the IndexedDB database `database` as a
 * storage, holding its tab lock while open.
 * @throws ConcordError `CONCORD_LOCKED` (another tab has it open),
 * `CONCORD_STORAGE_ERROR` (IndexedDB refused: private browsing without
 * IndexedDB, quota, a blocked upgrade), `CONCORD_INVALID_ARGUMENT`.
 */
export async function openIndexedDbStorage(options: IndexedDbStorageOptions): Promise<IndexedDbStorage> {
  throwIfAborted(options.signal)
  const { database } = options
  if (typeof database !== 'string' || database.length === 0 || database.length > 256) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'the IndexedDB database name must be a non-empty string of at most 256 characters')
  }
  if (!hasIndexedDb())
    throw new ConcordError(ErrorCodes.STORAGE_ERROR, 'this context has no IndexedDB (a private window of some browsers, a worker without it, or Node)')
  const what = `the IndexedDB database ${INDEXEDDB_PREFIX}${database}`
  const lock = await acquireWebLock(`${INDEXEDDB_PREFIX}${database}`, options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS, what)
  try {
    throwIfAborted(options.signal)
    const db = new DurableBrowserLevel(database, { prefix: INDEXEDDB_PREFIX, keyEncoding: 'view', valueEncoding: 'view' })
    return await new IndexedDbStorage(db as unknown as BytesLevel, `indexeddb:${database}`, lock.release, lock.held).open()
  } catch (error) {
    lock.release()
    throw error
  }
}
