/**
 * `node --import tsx bench/first-sync-sender-child.ts <dir> <mode>`: the
 * sender of `many-names/cold-first-sync` in a process of its own, so that
 * its CPU is measured apart from the receiver's. Opens the peer on `dir`
 * (written and closed by the bench: nothing in memory), listens, prints
 * `{ url }`; on the parent's `start` it takes its CPU time, on `report` it
 * sends its CPU time since and the names its store hydrated, and exits.
 * `mode` `hold`: answers hydrate every name they read, as before
 * `SyncHost.storedDeltas` (the baseline).
 */
import { createPeer } from '../peer/index.ts'
import { StoreSyncHost } from '../peer/store-sync-host.ts'

const [dir, mode] = process.argv.slice(2)
if (mode === 'hold') delete (StoreSyncHost.prototype as { storedDeltas?: unknown }).storedDeltas
const peer = await createPeer({ agentId: 'a', dir, durability: { mode: 'async', rpoMs: 100 }, cacheSize: 256 })
const { url } = (await peer.listen()) as { url: string }
const hydrated = peer.store.hydrations
let cpu = process.cpuUsage()
process.on('message', (message) => {
  if (message === 'start') {
    cpu = process.cpuUsage()
    return
  }
  const used = process.cpuUsage(cpu)
  process.send?.({ cpuUs: used.user + used.system, hydrations: peer.store.hydrations - hydrated }, () => {
    peer.close().then(() => process.exit(0))
  })
})
process.send?.({ url })
