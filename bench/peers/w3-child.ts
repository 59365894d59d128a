/**
 * `node --import tsx bench/peers/w3-child.ts <store|y-leveldb> <build|read> <dir> <docs>`:
 * W3's two halves, each in a fresh process. `build` writes `docs` small Yjs
 * documents (three typed edits each, as three updates) and closes; `read`
 * opens the folder and reads every document's text, and prints one JSON
 * line `{ ms, cpuMs, peakRssMiB, chars }` (open to last read, and the
 * process's CPU time over it; the process's peak RSS, Node's own included).
 */
import { join } from 'node:path'
import { LeveldbPersistence } from 'y-leveldb'
import * as Y from 'yjs'
import { openStore } from '../../persistence/index.ts'

const [kind, phase, dir, docsText] = process.argv.slice(2)
const docs = Number(docsText)
const name = (i: number) => `doc-${String(i).padStart(6, '0')}`

/** The three updates of document `i`: a line typed in three edits. */
function updatesOf(i: number): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const text = doc.getText('t')
  text.insert(0, `note ${i}: `)
  text.insert(text.length, 'agent wrote this')
  text.insert(text.length, '.')
  return updates
}

const now = () => Number(process.hrtime.bigint()) / 1e6
/** CPU time of the process (every thread: LevelDB's reads run in libuv's pool) since `from`, ms. */
const cpuSince = (from: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(from)
  return (used.user + used.system) / 1000
}
const folder = join(dir, kind)
if (phase === 'build') {
  if (kind === 'store') {
    const store = await openStore({ dir: folder, agentId: 'bench', sweepMs: 0, durability: { mode: 'async', rpoMs: 100 } })
    for (let i = 0; i < docs; i++) {
      await store.open(name(i), 'yjs')
      for (const update of updatesOf(i)) await store.applyRemote(name(i), update)
    }
    await store.close()
  } else {
    const persistence = new LeveldbPersistence(folder)
    for (let i = 0; i < docs; i++) for (const update of updatesOf(i)) await persistence.storeUpdate(name(i), update)
    await persistence.destroy()
  }
  console.log(JSON.stringify({ ok: true }))
} else {
  const start = now()
  const cpu = process.cpuUsage()
  let chars = 0
  if (kind === 'store') {
    const store = await openStore({ dir: folder, agentId: 'bench', sweepMs: 0 })
    for (const { name: n } of await store.listNames()) {
      const replica = (await store.open(n, 'yjs')) as unknown as { doc: Y.Doc }
      chars += replica.doc.getText('t').length
    }
    const ms = now() - start
    const cpuMs = cpuSince(cpu)
    await store.close()
    console.log(JSON.stringify({ ms, cpuMs, peakRssMiB: process.resourceUsage().maxRSS / 1024, chars }))
  } else {
    const persistence = new LeveldbPersistence(folder)
    // getAllDocNames is in y-leveldb 0.2.0's code but not in the class its types declare.
    const names = await (persistence as unknown as { getAllDocNames(): Promise<string[]> }).getAllDocNames()
    for (const n of names) {
      const doc = await persistence.getYDoc(n)
      chars += doc.getText('t').length
      doc.destroy()
    }
    const ms = now() - start
    const cpuMs = cpuSince(cpu)
    await persistence.destroy()
    console.log(JSON.stringify({ ms, cpuMs, peakRssMiB: process.resourceUsage().maxRSS / 1024, chars }))
  }
}
