/**
 * Point-in-time restore (issue 16): during a run over a real LevelDB folder
 * (several names, a transaction over two of them, a name created late, a
 * part of the log moved to the archive tier), the values of every name are
 * observed after each step with the time; a store restored at that time
 * (a wall-clock time, an HLC, through `Store.restoreTo` and `concord
 * restore-at`) holds, name by name, exactly the values observed then, and
 * verifies.
 */
import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { GCounterReplica, ORMapReplica, ORSetReplica } from '../../crdt/types/index.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { cliJson } from '../cli/helpers.ts'
import { tempDir, typeText } from '../persistence/helpers.ts'

const TYPES = { hits: 'gcounter', doc: 'yjs', facts: 'ormap', tags: 'orset', late: 'gcounter' } as const

async function valuesOf(store: Store): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for (const info of await store.names()) out[info.name] = (await store.open(info.name, info.type)).value()
  return out
}

test('a store restored at a time holds, name by name, the values observed at that time; from the API and the CLI', async () => {
  const { dir: root, remove } = await tempDir('concord-restore-')
  const dir = join(root, 'live')
  try {
    const clock = { now: 1_700_000_000_000 }
    let store = await openStore({
      dir,
      agentId: 'writer',
      sweepMs: 0,
      now: () => clock.now,
      checkpoint: { everyRecords: 3, everyMs: 0 },
      retention: { archiveAfterMs: 5_000 },
    })
    const observed: Array<{ wall: number; hlc: HlcTimestamp; values: Record<string, unknown> }> = []
    const observe = async (): Promise<void> => {
      await store.flush()
      observed.push({ wall: clock.now, hlc: store.clock.latest, values: await valuesOf(store) })
      clock.now += 1000
    }
    const hits = (await store.open('hits', TYPES.hits)) as GCounterReplica
    const doc = await store.open('doc', TYPES.doc)
    const facts = (await store.open('facts', TYPES.facts)) as ORMapReplica
    const tags = (await store.open('tags', TYPES.tags)) as ORSetReplica
    for (let step = 0; step < 12; step++) {
      await store.atomic(() => {
        hits.increment(step + 1)
        typeText(doc, String.fromCharCode(97 + step))
      })
      if (step % 3 === 0) await store.atomic(() => facts.set('step', step), { agent: 'ana', message: `step ${step}` })
      if (step === 4) tags.add('blue')
      if (step === 7) tags.delete('blue')
      if (step === 6) ((await store.open('late', TYPES.late)) as GCounterReplica).increment(5)
      if (step === 8) {
        // Part of the log leaves LevelDB for the archive tier; a restore still reads it.
        for (const name of ['hits', 'doc']) assert.ok((await store.applyRetention(name)).archived > 0, name)
      }
      await observe()
    }
    await store.close()
    store = await openStore({ dir, agentId: 'writer', sweepMs: 0, now: () => clock.now })
    const check = async (restoredDir: string, expected: Record<string, unknown>): Promise<void> => {
      const restored = await openStore({ dir: restoredDir, agentId: 'replay', sweepMs: 0 })
      try {
        assert.deepEqual(await valuesOf(restored), expected)
        for (const info of await restored.names()) assert.deepEqual((await restored.verify(info.name)).problems, [], info.name)
      } finally {
        await restored.close()
      }
    }
    for (const k of [0, 5, 9, 11]) {
      const byWall = join(root, `wall-${k}`)
      const report = await store.restoreTo(byWall, { at: observed[k].wall })
      assert.deepEqual(report.unavailable, [])
      await check(byWall, observed[k].values)
      const byHlc = join(root, `hlc-${k}`)
      await store.restoreTo(byHlc, { at: observed[k].hlc })
      await check(byHlc, observed[k].values)
    }
    // Before the first change: nothing. Not over an existing store.
    const empty = join(root, 'empty')
    assert.deepEqual((await store.restoreTo(empty, { at: observed[0].wall - 500 })).names, [])
    await assert.rejects(store.restoreTo(join(root, 'wall-0'), { at: observed[0].wall }), /already holds a store/)
    await assert.rejects(store.restoreTo(join(root, 'bad'), { at: -1 }), /at must be a time/)
    // A restored store keeps the history up to the cut: authors and messages included.
    const restored = await openStore({ dir: join(root, 'wall-5'), agentId: 'replay', sweepMs: 0 })
    assert.deepEqual(
      (await restored.history('facts')).map((h) => [h.agent, h.message]),
      [
        ['ana', 'step 0'],
        ['ana', 'step 3'],
      ],
    )
    await restored.close()
    await store.close()

    // The CLI, on the closed folder: an ISO time and an HLC.
    const iso = join(root, 'cli-iso')
    const run = await cliJson(['restore-at', '--dir', dir, '--at', new Date(observed[7].wall).toISOString(), '--out', iso])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(run.json.names.length, 5)
    await check(iso, observed[7].values)
    const hlcDir = join(root, 'cli-hlc')
    const { wall, logical } = observed[3].hlc
    assert.equal((await cliJson(['restore-at', '--dir', dir, '--at', `${wall}.${logical}`, '--out', hlcDir])).code, 0)
    await check(hlcDir, observed[3].values)
    const again = await cliJson(['restore-at', '--dir', dir, '--at', String(wall), '--out', hlcDir])
    assert.equal(again.code, 2, 'not into a folder that is not empty')
  } finally {
    await remove()
    await rm(`${join(root, 'live')}.archive`, { recursive: true, force: true })
  }
})

test('a restore never splits a transaction: cut at every time in the log, the names a transaction changed are all before the cut or all after', async () => {
  const { dir: root, remove } = await tempDir('concord-restore-unit-')
  const dir = join(root, 'live')
  try {
    const store = await openStore({ dir, agentId: 'writer', sweepMs: 0 })
    const names = ['x', 'y', 'z']
    const counters = await Promise.all(names.map(async (name) => (await store.open(name, 'gcounter')) as GCounterReplica))
    for (let round = 1; round <= 4; round++) {
      // Each round one transaction over the three names (two changes of x in it), then one change of y alone.
      await store.atomic(() => {
        for (const counter of counters) counter.increment(1)
        counters[0].increment(1)
      })
      counters[1].increment(10)
      await store.flush()
    }
    const times = new Map<string, HlcTimestamp>()
    for (const name of names) for (const entry of await store.history(name)) times.set(`${entry.hlc.wall}.${entry.hlc.logical}`, entry.hlc)
    const cuts = [...times.values()].flatMap((hlc) => [hlc, { wall: hlc.wall, logical: Math.max(0, hlc.logical - 1) }])
    let k = 0
    for (const at of cuts) {
      const out = join(root, `cut-${k++}`)
      await store.restoreTo(out, { at })
      const restored = await openStore({ dir: out, agentId: 'replay', sweepMs: 0 })
      try {
        const value = async (name: string) =>
          (await restored.names()).some((info) => info.name === name) ? ((await restored.open(name, 'gcounter')).value() as number) : 0
        const [x, y, z] = [await value('x'), await value('y'), await value('z')]
        // z counts the transactions in the cut; x has two per transaction; y one per transaction plus 10 per lone change.
        assert.equal(x, 2 * z, `cut at ${at.wall}.${at.logical}: x=${x} z=${z}`)
        assert.equal(y % 10, z, `cut at ${at.wall}.${at.logical}: y=${y} z=${z}`)
      } finally {
        await restored.close()
      }
    }
    await store.close()
  } finally {
    await remove()
  }
})
