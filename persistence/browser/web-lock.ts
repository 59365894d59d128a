/**
 * One writer per database across a browser's tabs: IndexedDB has no lock of
 * its own (LevelDB's LOCK file is what keeps a second process out of a
 * folder in Node), so two tabs opening one replica's database would both
 * append to its logs. An exclusive Web Lock named after the database is
 * held while the storage is open; the browser releases it when the page
 * goes away (a reload included).
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** The part of `navigator.locks` used here. */
interface LockManagerLike {
  request(name: string, options: { mode: 'exclusive'; signal?: AbortSignal }, callback: (lock: unknown) => Promise<void>): Promise<void>
}

function lockManager(): LockManagerLike | undefined {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks
  return locks && typeof locks.request === 'function' ? locks : undefined
}

/**
 * Takes the exclusive lock `name`, waiting at most `waitMs` for another
 * holder (a page being reloaded lets go as it unloads); resolves with the
 * function that releases it. Without Web Locks (an old browser) there is
 * nothing to take: the caller is told by `held: false`.
 * @throws ConcordError `CONCORD_LOCKED` when another tab or window keeps it.
 */
export async function acquireWebLock(name: string, waitMs: number, what: string): Promise<{ held: boolean; release: () => void }> {
  const locks = lockManager()
  if (!locks) return { held: false, release: () => {} }
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), waitMs)
  return new Promise((resolve, reject) => {
    locks
      .request(name, { mode: 'exclusive', signal: controller.signal }, () => {
        clearTimeout(timer)
        return new Promise<void>((release) => resolve({ held: true, release: () => release() }))
      })
      .catch((error: unknown) => {
        clearTimeout(timer)
        if (controller.signal.aborted) {
          reject(
            new ConcordError(
              ErrorCodes.LOCKED,
              `${what} is held by another tab or window of this site (waited ${waitMs} ms): close it first, or give this one another database`,
              { cause: error },
            ),
          )
        } else {
          reject(
            new ConcordError(ErrorCodes.STORAGE_ERROR, `${what}: the Web Lock could not be taken: ${(error as Error)?.message ?? String(error)}`, {
              cause: error,
            }),
          )
        }
      })
  })
}
