/**
 * The storage conformance suite (concord-crdt/testing), run in the page against
 * the browser peer's IndexedDB storage: every test on a database of its own,
 * deleted afterwards. `runStorageSuite()` resolves with each test's outcome.
 */
import { runStorageTests } from '../../../testing/storage-suite.ts'
import { INDEXEDDB_PREFIX, openIndexedDbStorage } from '../../../persistence/browser/indexeddb-storage.ts'
import type { Storage } from '../../../persistence/storage/storage.ts'

export * from './app.ts'

function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = (globalThis as any).indexedDB.deleteDatabase(name)
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
  })
}

/** Runs the suite; resolves with `{ name, error? }` per test. */
export async function runStorageSuite(): Promise<Array<{ name: string; error?: string }>> {
  const tests: Array<{ name: string; body: () => Promise<void> }> = []
  let next = 0
  runStorageTests({ describe: (_name, body) => body(), it: (name, body) => tests.push({ name, body }) }, 'indexeddb', async () => {
    const database = `suite-${++next}`
    let storage: Storage = await openIndexedDbStorage({ database })
    return {
      storage,
      reopen: async () => {
        await storage.close()
        storage = await openIndexedDbStorage({ database })
        return storage
      },
      teardown: async () => {
        await storage.close()
        await deleteDatabase(`${INDEXEDDB_PREFIX}${database}`)
      },
    }
  })
  const results: Array<{ name: string; error?: string }> = []
  for (const { name, body } of tests) {
    try {
      await body()
      results.push({ name })
    } catch (error) {
      results.push({ name, error: String((error as Error)?.stack ?? error) })
    }
  }
  return results
}
