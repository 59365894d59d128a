/**
 * Opening a data folder for a CLI command: the store's own replica id is
 * read from the folder (so any agent's folder can be inspected), a missing
 * folder is "not found" (commands that only read never create one), and a
 * folder held by a running peer is refused with `CONCORD_LOCKED`.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { openLevelStorage, type LevelStorage } from '../persistence/level/index.ts'
import { openStore, type Store } from '../persistence/store.ts'
// Internal to persistence/ (not in its index): the key and codec of the store info record.
import { STORE_INFO_KEY } from '../persistence/keys.ts'
import { decodeStoreInfo } from '../persistence/store-info.ts'
import { CliError, ExitCodes } from './exit-codes.ts'

/** The replica id a new folder gets when `--id` is not given. */
export const DEFAULT_CLI_ID = 'concord-cli'

/** A store opened by the CLI, and how to close it. */
export interface OpenedFolder {
  readonly store: Store
  /** The replica id the folder belongs to. */
  readonly id: string
  close(): Promise<void>
}

/** Options of {@link openFolder}. */
export interface OpenFolderOptions {
  /** Create the folder when missing (import); default false. */
  readonly create?: boolean
  /** Replica id for a new folder (default {@link DEFAULT_CLI_ID}). */
  readonly id?: string
  /** TTL (ms) of names that have none of their own (`expire --ttl`). */
  readonly ttlMs?: number
}

/** True when `dir` holds a LevelDB database. */
export function isDataFolder(dir: string): boolean {
  return existsSync(join(dir, 'CURRENT'))
}

/** Throws "not found" (exit 3) unless `dir` holds a LevelDB database. */
export function requireDataFolder(dir: string): void {
  if (!isDataFolder(dir)) throw new CliError(ExitCodes.NOT_FOUND, `no Concord data folder at ${dir}`)
}

async function readId(storage: LevelStorage): Promise<string | undefined> {
  const bytes = await storage.get(STORE_INFO_KEY)
  if (!bytes) return undefined
  return decodeStoreInfo(bytes).replicaId
}

/**
 * The replica id stored in `dir`, or undefined for a new or empty folder.
 * Throws `CONCORD_LOCKED` when a running peer holds the folder.
 */
export async function storedReplicaId(dir: string): Promise<string | undefined> {
  if (!isDataFolder(dir)) return undefined
  const storage = await openLevelStorage({ dir })
  try {
    return await readId(storage)
  } finally {
    await storage.close()
  }
}

/** Opens the store in `dir` with its own replica id, background sweeps off. */
export async function openFolder(dir: string, options: OpenFolderOptions = {}): Promise<OpenedFolder> {
  if (!options.create) requireDataFolder(dir)
  const storage = await openLevelStorage({ dir })
  try {
    const stored = await readId(storage)
    if (stored === undefined && !options.create) {
      throw new CliError(ExitCodes.NOT_FOUND, `${dir} is a LevelDB database but not a Concord data folder`)
    }
    const id = stored ?? options.id ?? DEFAULT_CLI_ID
    const store = await openStore({ storage, dir, replicaId: id, sweepMs: 0, ttlMs: options.ttlMs })
    return {
      store,
      id,
      close: async () => {
        try {
          await store.close()
        } finally {
          await storage.close()
        }
      },
    }
  } catch (error) {
    await storage.close().catch(() => undefined)
    throw error
  }
}

/** Runs `fn` with the store of `dir` open, closing it (flushed) after. */
export async function withFolder<T>(dir: string, fn: (folder: OpenedFolder) => Promise<T>, options: OpenFolderOptions = {}): Promise<T> {
  const folder = await openFolder(dir, options)
  try {
    return await fn(folder)
  } finally {
    await folder.close()
  }
}
