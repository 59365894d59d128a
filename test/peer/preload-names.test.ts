/**
 * A peer that listens or connects loads its store's index of names in the
 * background (`Store.preloadNames`), so that the first remote to list them
 * does not wait for it; a close while it loads stops it and loses nothing.
 * Real LevelDB folders, real sockets on 127.0.0.1.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { createPeer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

const NAMES = 3000
const nameOf = (i: number): string => `task/${String(i).padStart(5, '0')}`
const options = { durability: { mode: 'async' as const, rpoMs: 50 }, cacheSize: 64 }

async function seed(dir: string): Promise<void> {
  const peer = await createPeer({ agentId: 'a', dir, ...options })
  for (let start = 0; start < NAMES; start += 1000) {
    const replicas = await peer.openMany(Array.from({ length: 1000 }, (_, k) => ({ name: nameOf(start + k), type: 'pncounter' as const })))
    for (const replica of replicas) (replica as PNCounterReplica).increment(1)
  }
  await peer.close()
}

test('a peer that listens or connects loads its index of names in the background; a close while it loads stops it', async () => {
  const root = await tempDir('concord-preload-')
  try {
    const dir = join(root.path, 'a')
    await seed(dir)
    const a = await createPeer({ agentId: 'a', dir, ...options })
    assert.equal(a.store.listedType(nameOf(NAMES - 1)), undefined, 'not loaded at open')
    await a.listen()
    await until(() => a.store.listedType(nameOf(NAMES - 1)) === 'pncounter', 'the index loaded without a listNames')
    assert.equal(a.store.hydrations, 0, 'nothing hydrated for it')
    await a.close()
    // Connecting does the same (here to a listening peer with nothing).
    const b = await createPeer({ agentId: 'b', dir: join(root.path, 'b'), ...options })
    const { url } = (await b.listen()) as { url: string }
    const c = await createPeer({ agentId: 'a', dir, ...options })
    await c.connect(url)
    await until(() => c.store.listedType(nameOf(0)) === 'pncounter', 'the index loaded on connect')
    await c.close()
    await b.close()
    // Closed at once: the load is stopped, the close settles, nothing is lost.
    for (let round = 0; round < 3; round++) {
      const d = await createPeer({ agentId: 'a', dir, ...options })
      await d.listen()
      await d.close()
    }
    const e = await createPeer({ agentId: 'a', dir, ...options })
    assert.equal((await e.store.listNames()).length, NAMES)
    assert.deepEqual(e.store.losses, [])
    assert.equal((await e.counter(nameOf(1234))).value(), 1)
    await e.close()
  } finally {
    await root.remove()
  }
})
