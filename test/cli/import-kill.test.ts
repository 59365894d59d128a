/**
 * `concord import` killed midway (SIGKILL of a real process) leaves no
 * empty names: a name is created in the batch of its first records. Before,
 * every new name's metadata was written alone ahead of the commit, and a
 * kill left names whose type was fixed but which held nothing.
 */
import assert from 'node:assert/strict'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { createPeer } from '../../peer/index.ts'
import { openStore } from '../../persistence/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { cli, spawnConcord } from './helpers.ts'

const NAMES = 400

/** Bytes in the folder's LevelDB logs (0 while it does not exist yet). */
async function logBytes(dir: string): Promise<number> {
  let total = 0
  for (const file of await readdir(dir).catch(() => [] as string[])) {
    if (file.endsWith('.log') || file.endsWith('.ldb')) total += (await stat(join(dir, file)).catch(() => ({ size: 0 }))).size
  }
  return total
}

/** Runs an import and kills it with SIGKILL `delayMs` after its folder appears; false if it finished first. */
function importAndKill(dir: string, file: string, delayMs: number): Promise<boolean> {
  const child = spawnConcord(['import', '--dir', dir, '--id', 'importer', file])
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    const poll = setInterval(() => {
      logBytes(dir).then(
        (bytes) => {
          if (bytes > 0 && timer === undefined) timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
        },
        () => undefined,
      )
    }, 2)
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      clearInterval(poll)
      clearTimeout(timer)
      if (signal === 'SIGKILL') resolve(true)
      else if (code === 0) resolve(false)
      else reject(new Error(`import exited with ${code}`))
    })
  })
}

/** Runs a whole import; resolves with the ms from its folder appearing to its exit. */
function timeImport(dir: string, file: string): Promise<number> {
  const child = spawnConcord(['import', '--dir', dir, '--id', 'importer', file])
  return new Promise((resolve, reject) => {
    let started: number | undefined
    const poll = setInterval(() => {
      logBytes(dir).then(
        (bytes) => {
          if (bytes > 0) started ??= performance.now()
        },
        () => undefined,
      )
    }, 2)
    child.on('error', reject)
    child.on('exit', (code) => {
      clearInterval(poll)
      if (code !== 0) reject(new Error(`import exited with ${code}`))
      else resolve(performance.now() - (started ?? performance.now()))
    })
  })
}

test('an import killed midway leaves no empty names: every name it left holds its exported value', { timeout: 180_000 }, async () => {
  const root = await tempDir('concord-import-kill-')
  try {
    const source = join(root.path, 'source')
    const peer = await createPeer({ agentId: 'alice', dir: source })
    const expected = new Map<string, unknown>()
    for (let i = 0; i < NAMES; i++) {
      const set = await peer.set<string>(`set-${String(i).padStart(4, '0')}`)
      set.add(`element ${i} ${'p'.repeat(400)}`)
      expected.set(`set-${String(i).padStart(4, '0')}`, set.value())
    }
    await peer.close()
    const file = join(root.path, 'dump.jsonl')
    assert.equal((await cli(['export', '--dir', source, '--out', file])).code, 0)
    const duration = await timeImport(join(root.path, 'full'), file)

    // Kills spread over the import's duration (a real process: SIGKILL at any point of its work).
    // A loaded machine stretches or shrinks later imports against the timed one, so when no kill of the
    // first round landed midway, more rounds spread kills over twice the duration, offset each round.
    const SPREAD = 8
    const MAX_TRIALS = 32
    let midway = 0
    for (let trial = 0; trial < MAX_TRIALS && (trial < SPREAD || midway === 0); trial++) {
      const round = Math.floor(trial / SPREAD)
      const slot = (trial % SPREAD) + 0.5 + (round === 0 ? 0 : (round * 0.37) % 0.5)
      const killAfter = (duration * slot * (round === 0 ? 1 : 2)) / SPREAD
      const dir = join(root.path, `t${trial}`)
      const killed = await importAndKill(dir, file, killAfter)
      if (!killed) continue
      const store = await openStore({ dir, agentId: 'importer', sweepMs: 0 }).catch((error) => {
        // Killed before the folder was made: nothing to check.
        if (String(error).includes('not exist') || String(error).includes('does not')) return undefined
        throw error
      })
      if (store === undefined) continue
      try {
        const names = await store.names()
        for (const info of names) {
          assert.ok(info.lastSeq >= 1, `trial ${trial}: "${info.name}" was left empty (type fixed, no record)`)
          assert.deepEqual((await store.open(info.name, info.type)).value(), expected.get(info.name), `trial ${trial}: ${info.name}`)
        }
        if (names.length > 0 && names.length < NAMES) midway++
      } finally {
        await store.close()
      }
    }
    assert.ok(midway > 0, `no import was killed midway in ${MAX_TRIALS} trials`)
  } finally {
    await root.remove()
  }
})
