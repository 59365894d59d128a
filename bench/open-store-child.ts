/**
 * `node --import tsx bench/open-store-child.ts <dir>`: the read half of
 * `many-names/open-store` in a fresh process (so that its RSS is the open
 * store's, not the builder's): opens the folder, reads the first page of
 * 100 names, then the first `listNames()`, and closes (the first close of
 * the folder: no seal yet, so it lists every name); then opens it again,
 * changes one name and closes (the seal of the last close brought up to
 * date: persistence/lifecycle/seal.ts). Prints one JSON line with each
 * step's time (ms) and the process's RSS (MiB) before and after each.
 */
import type { PNCounterReplica } from '../crdt/types/index.ts'
import { openStore } from '../persistence/store.ts'

const now = () => Number(process.hrtime.bigint()) / 1e6
const rssMiB = () => process.memoryUsage().rss / 1048576
const dir = process.argv[2]
const rssBefore = rssMiB()
const openStart = now()
const store = await openStore({ dir, agentId: 'bench', sweepMs: 0 })
const openMs = now() - openStart
const rssOpen = rssMiB()
const pageStart = now()
const page = await store.pageNames({ limit: 100 })
const pageMs = now() - pageStart
const rssPage = rssMiB()
const listStart = now()
const listed = await store.listNames()
const listMs = now() - listStart
const rssList = rssMiB()
const firstCloseStart = now()
await store.close()
const firstCloseMs = now() - firstCloseStart
const again = await openStore({ dir, agentId: 'bench', sweepMs: 0 })
;((await again.open(page.names[0].name, 'pncounter')) as PNCounterReplica).increment(1)
const closeStart = now()
await again.close()
const closeMs = now() - closeStart
console.log(
  JSON.stringify({ rssBefore, openMs, rssOpen, pageMs, pageNames: page.names.length, rssPage, listMs, listed: listed.length, rssList, firstCloseMs, closeMs }),
)
