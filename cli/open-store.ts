/**
 * Opening a data folder for a CLI command: the store's own agent id is
 * read from the folder (so any agent's folder can be inspected), a missing
 * folder is "not found" (commands that only read never create one), and a
 * folder held by a running peer is refused with `CONCORD_LOCKED`.
 *
 * The CLI never claims a folder: one it creates (import) stays unclaimed
 * until a peer opens it (that peer owns it), unless `--id` names the owner.
 * Working in an unclaimed folder, the CLI writes (a revert) under a replica
 * id of its own for that run, so they never collide with a peer's.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { openLevelStorage, type LevelStorage } from '../persistence/storage/level/index.ts'
import { openStore, type Store } from '../persistence/store.ts'
// Internal to persistence/ (not in its index): the key and codec of the store info record.
import { STORE_INFO_KEY } from '../persistence/format/keys.ts'
import { decodeStoreInfo, UNCLAIMED } from '../persistence/format/store-info.ts'
import { folderKey } from './author-keys.ts'
import { CliError, ExitCodes } from './exit-codes.ts'

/** A store opened by the CLI, and how to close it. */
export interface OpenedFolder {
  readonly store: Store
  /** The agent id the folder belongs to; undefined while no peer has claimed it. */
  readonly agentId: string | undefined
  close(): Promise<void>
}

/** Options of {@link openFolder}. */
export interface OpenFolderOptions {
  /** Create the folder when missing (import); default false. */
  readonly create?: boolean
  /** Claim a new or unclaimed folder for this agent id (default: leave it unclaimed). */
  readonly agentId?: string
  /** TTL (ms) of names that have none of their own (`expire --ttl`). */
  readonly ttlMs?: number
  /**
   * Author ids bound to keys (`--author-key`, cli/author-keys.ts), besides
   * the owner's key in `<dir>/libp2p-key`: what `history` and `verify` check
   * signatures against.
   */
  readonly authorKeys?: ReadonlyMap<string, Uint8Array>
}

/** An agent id for what the CLI writes in an unclaimed folder during one run. */
export function cliRunId(): string {
  return `concord-cli-${randomBytes(6).toString('hex')}`
}

/** True when `dir` holds a LevelDB database. */
export function isDataFolder(dir: string): boolean {
  return existsSync(join(dir, 'CURRENT'))
}

/** Throws "not found" (exit 3) unless `dir` holds a LevelDB database. */
export function requireDataFolder(dir: string): void {
  if (!isDataFolder(dir)) throw new CliError(ExitCodes.NOT_FOUND, `no Concord data folder at ${dir}`)
}

/** The store info's agent id: undefined when the folder has no store info, UNCLAIMED ('') when no peer claimed it. */
async function readId(storage: LevelStorage): Promise<string | undefined> {
  const bytes = await storage.get(STORE_INFO_KEY)
  if (!bytes) return undefined
  return decodeStoreInfo(bytes).agentId
}

/**
 * The agent id stored in `dir`, or undefined for a new, empty or
 * unclaimed folder. Throws `CONCORD_LOCKED` when a running peer holds it.
 */
export async function storedAgentId(dir: string): Promise<string | undefined> {
  if (!isDataFolder(dir)) return undefined
  const storage = await openLevelStorage({ dir })
  try {
    const id = await readId(storage)
    return id === UNCLAIMED ? undefined : id
  } finally {
    await storage.close()
  }
}

/** Opens the store in `dir` with its own agent id, background sweeps off. */
export async function openFolder(dir: string, options: OpenFolderOptions = {}): Promise<OpenedFolder> {
  if (!options.create) requireDataFolder(dir)
  const storage = await openLevelStorage({ dir })
  try {
    const stored = await readId(storage)
    if (stored === undefined && !options.create) {
      throw new CliError(ExitCodes.NOT_FOUND, `${dir} is a LevelDB database but not a Concord data folder`)
    }
    const owner = stored === UNCLAIMED ? undefined : stored
    if (owner !== undefined && options.agentId !== undefined && options.agentId !== owner) {
      throw new CliError(ExitCodes.USAGE, `${dir} belongs to agent "${owner}", not "${options.agentId}": leave out --id, or use another folder`)
    }
    const claimFor = owner ?? options.agentId
    const keys = new Map<string, Uint8Array>()
    const ownKey = owner !== undefined ? await folderKey(dir) : undefined
    if (owner !== undefined && ownKey !== undefined) keys.set(owner, ownKey)
    for (const [id, key] of options.authorKeys ?? []) keys.set(id, key)
    const store = await openStore({
      storage,
      dir,
      agentId: claimFor ?? cliRunId(),
      claim: claimFor !== undefined,
      sweepMs: 0,
      ttlMs: options.ttlMs,
      ...(keys.size > 0 ? { signatures: { authorKey: (agent: string) => keys.get(agent) } } : {}),
    })
    return {
      store,
      agentId: claimFor,
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
