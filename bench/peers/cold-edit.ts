/**
 * `npx tsx bench/peers/cold-edit.ts [edits] [idleMs]`: what one typed
 * character costs on the event loop hot and after the process slept
 * (issue 19, W1 at light load): `Y.Text.insert` in a bare Y.Doc and in a
 * document of a Concord store without a folder (the W1 client's), timed by
 * hrtime around the call, p50 and p90 of the edits after the first quarter.
 * Each contender runs back to back (the next edit at once) and with
 * `idleMs` of sleep before each edit (default 10, W1's clients sleep ~40):
 * on a VM an edit after idle runs several times slower (vCPU wake-up, cold
 * caches), so the code and memory an edit touches weigh more than its hot CPU time.
 */
import * as Y from 'yjs'
import { openStore } from '../../persistence/index.ts'

const edits = Number(process.argv[2] ?? 1000)
const idleMs = Number(process.argv[3] ?? 10)

/** p50 and p90 (µs) of `insert` timed `edits` times, sleeping `sleepMs` before each (0: a macrotask turn only). */
async function timeInserts(text: Y.Text, sleepMs: number): Promise<{ p50: number; p90: number }> {
  const took: number[] = []
  for (let i = 0; i < edits; i++) {
    await new Promise((resolve) => (sleepMs > 0 ? setTimeout(resolve, sleepMs) : setImmediate(resolve)))
    const start = process.hrtime.bigint()
    text.insert(i, 'a')
    took.push(Number(process.hrtime.bigint() - start) / 1e3)
  }
  const sorted = took.slice(Math.floor(edits / 4)).sort((a, b) => a - b)
  return { p50: sorted[Math.floor(sorted.length / 2)], p90: sorted[Math.floor(sorted.length * 0.9)] }
}

async function bareText(): Promise<{ text: Y.Text; close(): Promise<void> }> {
  const doc = new Y.Doc()
  doc.on('update', () => {}) // a y-websocket client encodes every update for its socket
  return { text: doc.getText('t'), close: async () => doc.destroy() }
}

async function storeText(): Promise<{ text: Y.Text; close(): Promise<void> }> {
  const store = await openStore({ agentId: 'cold-edit', sweepMs: 0 })
  const replica = (await store.open('doc', 'yjs')) as unknown as { doc: Y.Doc }
  return { text: replica.doc.getText('t'), close: () => store.close() }
}

const rows: string[] = []
for (const [label, make] of [
  ['bare Yjs', bareText],
  ['Concord store (no folder)', storeText],
] as const) {
  for (const sleepMs of [0, idleMs]) {
    const { text, close } = await make()
    const { p50, p90 } = await timeInserts(text, sleepMs)
    await close()
    rows.push(
      `${label.padEnd(26)} ${sleepMs === 0 ? 'back to back' : `after ${sleepMs} ms idle`}`.padEnd(50) +
        `p50 ${p50.toFixed(0).padStart(4)} µs  p90 ${p90.toFixed(0).padStart(4)} µs`,
    )
  }
}
console.log(`one character inserted, ${edits} edits each (the first quarter left out):`)
for (const row of rows) console.log(`  ${row}`)
