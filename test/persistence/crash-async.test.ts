/**
 * Crash test of `async` mode with real processes: a child types into a Yjs
 * document (one character per transaction, so queued changes are merged
 * into one record) and reports how many characters its `committed` events
 * acknowledged; the parent kills it with SIGKILL at a random moment, then
 * checks that every acknowledged character is there (a process crash loses
 * nothing acknowledged in async mode), the log replays and verifies, and no
 * torn tail was found. 10 cycles in the default list, 50 in
 * `npm run test:crash` (or CONCORD_CRASH_CYCLES). CONCORD_SEED replays a run.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { it } from 'node:test'
import { openStore } from '../../persistence/index.ts'
import { tempDir, textOf } from './helpers.ts'

const cycles = Number(process.env.CONCORD_CRASH_CYCLES ?? (process.env.CONCORD_TEST_LIST === 'crash' ? 50 : 10))
const seed = Number(process.env.CONCORD_SEED ?? Date.now() % 1_000_000)

function mulberry32(a: number): () => number {
  return () => {
    a |= 0
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Runs the writer until a random moment after it is ready, kills it, returns the highest acknowledged length. */
function runAndKill(dir: string, delayMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', './shim/node20.ts', 'test/persistence/fixtures/crash-writer-async.ts', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let acked = 0
    let buffer = ''
    let stderr = ''
    let timer: NodeJS.Timeout | undefined
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      const lines = buffer.split('\n')
      buffer = lines.pop()!
      for (const line of lines) {
        const match = /^ack (\d+)$/.exec(line)
        if (match) acked = Math.max(acked, Number(match[1]))
        if (timer === undefined && line === 'ready') timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal !== 'SIGKILL') reject(new Error(`writer exited by itself (code ${code}): ${stderr}`))
      else resolve(acked)
    })
  })
}

it(`async mode: SIGKILL at random moments loses no acknowledged change (${cycles} cycles, seed ${seed})`, { timeout: 600_000 }, async () => {
  const random = mulberry32(seed)
  const { dir, remove } = await tempDir('concord-crash-async-')
  try {
    let previous = 0
    let totalAcked = 0
    for (let cycle = 0; cycle < cycles; cycle++) {
      const acked = await runAndKill(dir, 5 + Math.floor(random() * 150))
      totalAcked += acked
      const store = await openStore({ dir, replicaId: 'crash-writer', sweepMs: 0, checkpoint: { onClose: false } })
      try {
        const text = textOf(await store.open('doc', 'yjs'))
        const context = `seed ${seed}, cycle ${cycle}`
        assert.ok(text.length >= acked, `${context}: ${acked} characters acknowledged but ${text.length} recovered`)
        assert.ok(text.length >= previous, `${context}: the text went back from ${previous} to ${text.length}`)
        assert.equal(text, 'x'.repeat(text.length), context)
        assert.deepEqual((await store.verify('doc')).problems, [], context)
        assert.equal(store.truncations.length, 0, `${context}: a torn tail after a process crash`)
        previous = text.length
      } finally {
        await store.close()
      }
    }
    assert.ok(totalAcked > 0, 'the writer acknowledged nothing')
  } finally {
    await remove()
  }
})
