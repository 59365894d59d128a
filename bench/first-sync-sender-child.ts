/**
 * `node --import tsx bench/first-sync-sender-child.ts <dir> <mode>`: the
 * sender of `many-names/cold-first-sync` in a process of its own, so that
 * its CPU is measured apart from the receiver's. Opens the peer on `dir`
 * (written and closed by the bench: nothing in memory), listens, prints
 * `{ url }`; on `report` it sends its CPU time since it began to listen
 * (the index of names loads from there) and the names its store
 * hydrated, and exits.
 * `mode` `hold`: answers hydrate every name they read, as before
 * `SyncHost.storedDeltas` (the baseline).
 */
import { createPeer } from '../peer/index.ts'
import { StoreSyncHost } from '../peer/store-sync-host.ts'

const [dir, mode] = process.argv.slice(2)
if (mode === 'hold') delete (StoreSyncHost.prototype as { storedDeltas?: unknown }).storedDeltas
const peer = await createPeer({ agentId: 'a', dir, durability: { mode: 'async', rpoMs: 100 }, cacheSize: 256 })
const hydrated = peer.store.hydrations
// From before listen: the index of names it loads from there (Store.preloadNames) is part of the sync's cost.
const cpu = process.cpuUsage()
const { url } = (await peer.listen()) as { url: string }
process.on('message', (message) => {
  if (message === 'start') return
  const used = process.cpuUsage(cpu)
  process.send?.({ cpuUs: used.user + used.system, hydrations: peer.store.hydrations - hydrated }, () => {
    peer.close().then(() => process.exit(0))
  })
})
process.send?.({ url })
