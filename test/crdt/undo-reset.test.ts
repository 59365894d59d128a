/**
 * The rollback primitives of replicas (crdt/replica.ts): `recordUndo` takes
 * back exactly what was done since it started, `reset` replaces the state
 * in place and never lets an id be handed out twice, `guard` refuses
 * mutations. Seeded random histories over every type.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { Replica } from '../../crdt/replica.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { ALL_TYPES, NATIVE_TYPES, makeReplica, mutate } from '../sync/helpers/memory-host.ts'

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
const valueText = (replica: Replica): string => JSON.stringify(replica.value())
const SEEDS = 40

/** Gives `replica` a random history: local changes and (unless `localOnly`) deltas of another replica. */
function history(replica: Replica, other: Replica, random: Prng, steps: number, tag: string, localOnly = false): void {
  for (let i = 0; i < steps; i++) {
    if (!localOnly && random.chance(0.3)) {
      mutate(other, random, `${tag}-o${i}`)
      const delta = other.deltaSince(replica.version())
      if (delta) replica.applyDelta(delta)
    } else {
      mutate(replica, random, `${tag}-${i}`)
    }
  }
}

describe('recordUndo', () => {
  for (const type of ALL_TYPES) {
    it(`${type}: undo gives back the value${type === 'yjs' ? '' : ' and the version'}${NATIVE_TYPES.includes(type) ? ' and the state' : ''} from before, over ${SEEDS} seeded histories`, () => {
      for (let seed = 1; seed <= SEEDS; seed++) {
        const random = new Prng(seed)
        const replica = makeReplica(type, 'a')
        const other = makeReplica(type, 'b')
        history(replica, other, random, random.int(0, 6), 'before')
        const before = { value: valueText(replica), version: hex(replica.version()), snapshot: hex(replica.snapshot()) }
        const rollbacks: boolean[] = []
        replica.events.on('change', (event) => {
          if (event.rollback) rollbacks.push(true)
        })
        const record = replica.recordUndo!()
        // A Yjs record takes back the document's local transactions (remote ones are another replica's).
        history(replica, other, random, random.int(1, 6), 'undone', type === 'yjs')
        const exact = record.undo()
        const context = `${type}, seed ${seed}`
        assert.equal(valueText(replica), before.value, `${context}: value`)
        assert.equal(exact, type !== 'yjs', `${context}: exact`)
        if (type !== 'yjs') assert.equal(hex(replica.version()), before.version, `${context}: version`)
        if (NATIVE_TYPES.includes(type)) assert.equal(hex(replica.snapshot()), before.snapshot, `${context}: state`)
        // It still takes changes, and a replica that gets everything from it converges.
        mutate(replica, random, 'after')
        const copy = makeReplica(type, 'c')
        const delta = replica.deltaSince(copy.version())
        if (delta) copy.applyDelta(delta)
        assert.equal(valueText(copy), valueText(replica), `${context}: a copy converges`)
      }
    })
  }

  it('release keeps the changes; a second undo does nothing', () => {
    for (const type of ALL_TYPES) {
      const random = new Prng(5)
      const replica = makeReplica(type, 'a')
      const record = replica.recordUndo!()
      mutate(replica, random, 'kept')
      const value = valueText(replica)
      record.release()
      record.undo()
      assert.equal(valueText(replica), value, type)
    }
  })
})

describe('reset', () => {
  for (const type of ALL_TYPES.filter((t) => t !== 'yjs')) {
    it(`${type}: takes another state in place, emits a rollback change, and never reuses an id it used`, () => {
      for (let seed = 1; seed <= SEEDS; seed++) {
        const random = new Prng(seed)
        const replica = makeReplica(type, 'a')
        const other = makeReplica(type, 'b')
        history(replica, other, random, random.int(0, 4), 'logged')
        const logged = makeReplica(type, 'a', replica.snapshot())
        // Changes that get refused; a peer received them before (a leak through anti-entropy).
        const peer = makeReplica(type, 'p', replica.snapshot())
        history(replica, other, random, random.int(1, 4), 'refused')
        const leaked = replica.deltaSince(peer.version())
        if (leaked) peer.applyDelta(leaked)
        let rollbacks = 0
        replica.events.on('change', (event) => {
          if (event.rollback) rollbacks++
        })
        replica.reset!(logged.snapshot())
        const context = `${type}, seed ${seed}`
        assert.equal(valueText(replica), valueText(logged), `${context}: value`)
        assert.equal(rollbacks, 1, `${context}: one rollback event`)
        // New changes after the reset, shipped to the peer that held the refused ones: both converge.
        for (let i = 0; i < 3; i++) mutate(replica, random, `new-${i}`)
        const toPeer = replica.deltaSince(peer.version())
        if (toPeer) peer.applyDelta(toPeer)
        const back = peer.deltaSince(replica.version())
        if (back) replica.applyDelta(back)
        assert.equal(valueText(peer), valueText(replica), `${context}: converged with a peer that held refused changes`)
      }
    })
  }
})

describe('guard', () => {
  it('a guard that throws refuses every local mutation before it happens (a Yjs edit is undone at once)', () => {
    for (const type of ALL_TYPES) {
      const random = new Prng(9)
      const replica = makeReplica(type, 'a')
      mutate(replica, random, 'first')
      const value = valueText(replica)
      replica.guard = () => {
        throw new ConcordError(ErrorCodes.CLOSED, 'closed')
      }
      let changes = 0
      replica.events.on('change', () => changes++)
      for (let i = 0; i < 5; i++) {
        try {
          mutate(replica, random, `refused-${i}`)
          assert.equal(type, 'yjs', `${type}: a refused mutation throws`)
        } catch (error) {
          assert.ok(isConcordError(error, 'CONCORD_CLOSED'), `${type}: ${String(error)}`)
        }
      }
      assert.equal(valueText(replica), value, type)
      assert.equal(changes, 0, `${type}: no change event`)
      replica.guard = undefined
      for (let i = 0; i < 5 && valueText(replica) === value; i++) mutate(replica, random, `again-${i}`)
      assert.notEqual(valueText(replica), value, `${type}: mutations work once the guard allows them`)
    }
  })
})
