import * as Y from 'yjs'
import { openStore } from './persistence/index.ts'
import { typingUpdates } from './bench/ingest-contenders.ts'
const N = Number(process.argv[2] ?? 5000)
const mode = process.argv[3] ?? 'store'
// updates from another client, typed one char each
const updates = typingUpdates(N)
if (mode === 'yjs') {
  const doc = new Y.Doc()
  const u0 = process.cpuUsage()
  for (const u of updates) Y.applyUpdate(doc, u)
  const u = process.cpuUsage(u0)
  console.log('bare Y.applyUpdate', ((u.user + u.system) / N).toFixed(1), 'µs per update')
} else {
  const store = await openStore({ agentId: 'client', sweepMs: 0 })
  await store.open('doc', 'yjs')
  const wait = mode === 'await'
  const u0 = process.cpuUsage()
  const t0 = performance.now()
  const pending: Promise<unknown>[] = []
  for (const u of updates) {
    const p = store.commit([{ name: 'doc', delta: u }], { agent: 'client-2' })
    if (wait) await p
    else pending.push(p)
  }
  await Promise.all(pending)
  const u = process.cpuUsage(u0)
  console.log(
    `store.commit (${wait ? 'each awaited' : 'not awaited'})`,
    ((u.user + u.system) / N).toFixed(1),
    'µs per update',
    (((performance.now() - t0) * 1000) / N).toFixed(1),
    'µs wall',
  )
  await store.close()
}
