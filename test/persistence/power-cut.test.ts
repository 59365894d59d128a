/**
 * Power-cut simulation: a fault-injecting storage drops every write not yet
 * synced (keeping a random prefix of them, as LevelDB's append-only log
 * would) at a random point. In `sync` mode nothing acknowledged is lost; in
 * `async` mode only what was acknowledged within the last `rpoMs`.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import fc from 'fast-check'
import { yjsReplicaFactory } from '../../crdt/documents/yjs-replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { openStore } from '../../persistence/index.ts'
import { FakeTimers, settle, textOf, typeText } from './helpers.ts'

const NAMES = ['n0', 'n1', 'n2']

/** Deltas that each append one character ('a' + index) to the text, made by distinct agents in order. */
function chainOfDeltas(count: number, tag: string): Uint8Array[] {
  const source = yjsReplicaFactory.create({ agentId: agentId(`src-${tag}`) })
  const deltas: Uint8Array[] = []
  source.events.on('change', (event) => deltas.push(event.delta))
  for (let i = 0; i < count; i++) typeText(source, String.fromCharCode(97 + (i % 26)))
  return deltas
}

it('sync mode: a power cut at a random point loses no acknowledged record', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 0, max: 30 }),
      fc.integer({ min: 0, max: 1000 }),
      async (targets, turns, keepSeed) => {
        const storage = await FaultStorage.create()
        const store = await openStore({ storage, agentId: 'a', sweepMs: 0, checkpoint: { everyRecords: 7 } })
        for (const name of NAMES) await store.open(name, 'yjs')
        const deltas = new Map(NAMES.map((name) => [name, chainOfDeltas(targets.length, name)]))
        const used = new Map(NAMES.map((name) => [name, 0]))
        const acked = new Map(NAMES.map((name) => [name, 0]))
        const writes = targets.map((t) => {
          const name = NAMES[t]
          const index = used.get(name)!
          used.set(name, index + 1)
          return store.applyRemote(name, deltas.get(name)![index]).then(
            (result) => {
              acked.set(name, Math.max(acked.get(name)!, result.seq))
            },
            () => undefined,
          )
        })
        await settle(turns)
        const survivor = await storage.powerCut({ keep: keepSeed % (storage.unsyncedBatches + 1) })
        await Promise.allSettled(writes)
        await store.close().catch(() => undefined)
        const again = await openStore({ storage: survivor, agentId: 'a', sweepMs: 0 })
        for (const name of NAMES) {
          const replica = await again.open(name, 'yjs')
          const last = again.committedSeq(name)
          assert.ok(last >= acked.get(name)!, `${name}: acked ${acked.get(name)} but only ${last} survived`)
          // Records are the deltas in order: the state is exactly the first `last` characters.
          const expected = Array.from({ length: last }, (_, i) => String.fromCharCode(97 + (i % 26))).join('')
          assert.equal(textOf(replica), expected)
          assert.deepEqual((await again.verify(name)).problems, [])
        }
        await again.close()
      },
    ),
    { seed: 1337, numRuns: 60 },
  )
})

it('async mode: a power cut loses at most the last rpoMs of acknowledged records', async () => {
  const rpoMs = 100
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ name: fc.integer({ min: 0, max: 2 }), wait: fc.integer({ min: 0, max: 60 }) }), { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 0, max: 1000 }),
      async (steps, keepSeed) => {
        const timers = new FakeTimers()
        const storage = await FaultStorage.create()
        const store = await openStore({ storage, agentId: 'a', sweepMs: 0, timers, now: timers.now, durability: { mode: 'async', rpoMs } })
        for (const name of NAMES) await store.open(name, 'yjs')
        const deltas = new Map(NAMES.map((name) => [name, chainOfDeltas(steps.length, name)]))
        const used = new Map(NAMES.map((name) => [name, 0]))
        const ackedAt = new Map(NAMES.map((name) => [name, [] as Array<{ seq: number; time: number }>]))
        for (const step of steps) {
          const name = NAMES[step.name]
          const index = used.get(name)!
          used.set(name, index + 1)
          const result = await store.applyRemote(name, deltas.get(name)![index])
          ackedAt.get(name)!.push({ seq: result.seq, time: timers.time })
          timers.advance(step.wait)
          await settle(3)
        }
        const cutAt = timers.time
        const survivor = await storage.powerCut({ keep: keepSeed % (storage.unsyncedBatches + 1) })
        await store.close().catch(() => undefined)
        const again = await openStore({ storage: survivor, agentId: 'a', sweepMs: 0 })
        for (const name of NAMES) {
          await again.open(name, 'yjs')
          const last = again.committedSeq(name)
          const mustSurvive = Math.max(
            0,
            ...ackedAt
              .get(name)!
              .filter((a) => a.time <= cutAt - rpoMs)
              .map((a) => a.seq),
          )
          assert.ok(last >= mustSurvive, `${name}: seq ${mustSurvive} was acknowledged more than ${rpoMs} ms before the cut but only ${last} survived`)
          assert.deepEqual((await again.verify(name)).problems, [])
        }
        await again.close()
      },
    ),
    { seed: 4711, numRuns: 40 },
  )
})
