/**
 * The Automerge replica's view (`doc`, `value()`) always equals the document
 * it stands for, however remote changes are grouped into deltas.
 *
 * Automerge 3.5.0 patches its JS view wrongly when one application brings
 * both the deletion of a map key's winning value and a concurrent value that
 * ranks below it (found by the peer chaos run, seed 1513): the replica
 * rebuilds its view in that case (see ConflictPatchWatch in
 * automerge-replica.ts). These tests fail without that rebuild.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as A from '@automerge/automerge'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { Prng } from '../../../transports/memory/prng.ts'
import { concatBytes } from '../../helpers/bytes.ts'
import { localDelta } from '../../helpers/local-delta.ts'

type Doc = Record<string, unknown>

const actor = (prefix: string): string => prefix.padEnd(32, '0')

/** What the replica's state really is: its saved document, loaded afresh. */
function reloaded(replica: AutomergeReplica<Doc>): unknown {
  return new AutomergeReplica<Doc>({ agentId: agentId('check'), snapshot: replica.snapshot() }).value()
}

test('a deleted winner and a lower concurrent value arriving in one delta: the view shows the revealed value', () => {
  const origin = new AutomergeReplica<Doc>({ agentId: agentId('x'), actor: actor('1d54') })
  origin.change((doc) => {
    doc.k3 = { n: 1 }
  })
  const base = origin.snapshot()
  const fork = (name: string, hex: string) => new AutomergeReplica<Doc>({ agentId: agentId(name), snapshot: base, actor: actor(hex) })
  const c = fork('c', '9c1c')
  const b = fork('b', '9bb0')
  // c overwrites k3 (its op ranks above b's: same counter, greater actor), then deletes it.
  const c2 = localDelta(c, () =>
    c.change((doc) => {
      doc.k3 = { n: 35, tag: 'c' }
    }),
  )!
  const c3 = localDelta(c, () =>
    c.change((doc) => {
      delete doc.k3
    }),
  )!
  const b1 = localDelta(b, () =>
    b.change((doc) => {
      doc.k3 = { n: 33, tag: 'b' }
    }),
  )!

  const receiver = fork('r', 'ffff')
  assert.equal(receiver.applyDelta(c2), true)
  assert.deepEqual(receiver.value(), { k3: { n: 35, tag: 'c' } })
  assert.equal(receiver.applyDelta(concatBytes([c3, b1])), true)
  assert.deepEqual(receiver.value(), { k3: { n: 33, tag: 'b' } })
  assert.deepEqual(receiver.value(), reloaded(receiver))
  // The rebuilt document keeps the replica's actor and stays writable.
  assert.equal(A.getActorId(receiver.doc), actor('ffff'))
  const local = localDelta(receiver, () =>
    receiver.change((doc) => {
      ;(doc.k3 as { n: number }).n = 99
    }),
  )
  assert.ok(local !== null)
  assert.equal(A.decodeChange(local).actor, actor('ffff'))
  assert.deepEqual(receiver.value(), { k3: { n: 99, tag: 'b' } })
  assert.deepEqual(receiver.value(), reloaded(receiver))
})

test('random concurrent map, list and text edits, received in random groupings: the view always equals the document', () => {
  const prng = new Prng(Number(process.env.CONCORD_SEED ?? 20261129))
  const random = () => prng.next()
  const pick = <T>(items: readonly T[]): T => prng.pick(items)
  let checked = 0
  for (let scenario = 0; scenario < 80; scenario++) {
    const origin = new AutomergeReplica<Doc>({ agentId: agentId('o'), actor: actor('ee') })
    origin.change((doc) => {
      doc.m = { k1: { n: 0 } }
      doc.l = [{ v: 0 }]
      doc.t = 'abc'
    })
    const base = origin.snapshot()
    const agents = ['aa', 'bb', 'cc', 'dd'].map((hex) => new AutomergeReplica<Doc>({ agentId: agentId(hex), snapshot: base, actor: actor(hex) }))
    let local = 0
    for (let step = 0; step < 20; step++) {
      const agent = pick(agents)
      if (random() < 0.3) {
        const other = pick(agents)
        if (other !== agent) {
          const delta = other.deltaSince(agent.version())
          if (delta !== null) agent.applyDelta(delta)
        }
        continue
      }
      const change = localDelta(agent, () =>
        agent.change((doc) => {
          const map = doc.m as Record<string, unknown>
          const list = doc.l as unknown[]
          const key = pick(['k1', 'k2'])
          const roll = random()
          if (roll < 0.3) map[key] = { n: Math.floor(random() * 100), tag: agent.agentId }
          else if (roll < 0.45) delete map[key]
          else if (roll < 0.5) map[key] = step
          else if (roll < 0.55) {
            const value = map[key]
            if (typeof value === 'object' && value !== null) (value as { n: number }).n = step
          } else if (roll < 0.65) list.splice(Math.floor(random() * (list.length + 1)), 0, { v: step })
          else if (roll < 0.75 && list.length > 0) list[Math.floor(random() * list.length)] = { v: -step }
          else if (roll < 0.85 && list.length > 0) list.splice(Math.floor(random() * list.length), 1)
          else {
            const text = doc.t as string
            const removing = random() < 0.3 && text.length > 0 ? 1 : 0
            A.splice(doc, ['t'], Math.floor(random() * (text.length + 1 - removing)), removing, random() < 0.7 ? 'x' : '')
          }
        }),
      )
      if (change !== null) local++
    }
    // Every change (getAllChanges lists them in an order that respects dependencies), in random groups.
    const all = agents.reduce(
      (acc, agent) => {
        const delta = agent.deltaSince(acc.version())
        if (delta !== null) acc.applyDelta(delta)
        return acc
      },
      new AutomergeReplica<Doc>({ agentId: agentId('all'), snapshot: base }),
    )
    const history = A.getAllChanges(all.doc).slice(1)
    for (let trial = 0; trial < 3; trial++) {
      const receiver = new AutomergeReplica<Doc>({ agentId: agentId('r'), snapshot: base, actor: actor('ff') })
      for (let index = 0; index < history.length; ) {
        const size = 1 + Math.floor(random() * 5)
        receiver.applyDelta(concatBytes(history.slice(index, index + size)))
        index += size
        assert.deepEqual(receiver.value(), reloaded(receiver), `scenario ${scenario}, trial ${trial}, after change ${index}`)
        checked++
      }
      assert.deepEqual(receiver.value(), all.value())
    }
    assert.ok(local > 0)
  }
  assert.ok(checked > 300, `checked ${checked} groupings`)
})
