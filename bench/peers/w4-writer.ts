/**
 * `node --import tsx bench/peers/w4-writer.ts <store|level-put> <count> <dir>`:
 * one writer awaiting each of `count` small Yjs updates (one typed
 * character each) until durable: through a store in `sync` mode, or
 * classic-level `put(sync)` alone. Prints one JSON line: `{ ops, seconds,
 * cpuMs, groupCommits }` (the loop's wall and CPU time; the store's fsynced
 * batches, for put(sync) one per put).
 * Run under `strace -f -c` by bench/peers/w4.ts to count the fdatasyncs.
 */
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { openStore } from '../../persistence/index.ts'
import { typingUpdates } from '../ingest-contenders.ts'

const [kind, countText, dir] = process.argv.slice(2)
const count = Number(countText)
const updates = typingUpdates(count)
if (kind === 'store') {
  const store = await openStore({ dir: join(dir, 'store'), agentId: 'bench', sweepMs: 0, durability: { mode: 'sync' } })
  await store.open('doc', 'yjs')
  const before = store.durability().fsyncs
  const cpu = process.cpuUsage()
  const start = process.hrtime.bigint()
  for (const update of updates) await store.applyRemote('doc', update)
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  const used = process.cpuUsage(cpu)
  const cpuMs = (used.user + used.system) / 1000
  const groupCommits = store.durability().fsyncs - before
  await store.close()
  console.log(JSON.stringify({ ops: count, seconds, cpuMs, groupCommits }))
} else {
  const db = new ClassicLevel<string, Uint8Array>(join(dir, 'level'), { valueEncoding: 'view' })
  await db.open()
  const cpu = process.cpuUsage()
  const start = process.hrtime.bigint()
  for (let i = 0; i < count; i++) await db.put(`k${String(i).padStart(10, '0')}`, updates[i], { sync: true })
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  const used = process.cpuUsage(cpu)
  await db.close()
  console.log(JSON.stringify({ ops: count, seconds, cpuMs: (used.user + used.system) / 1000, groupCommits: count }))
}
