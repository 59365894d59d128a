/**
 * Type-specific semantics of the native CRDTs: add-wins and observed-remove,
 * LWW ordering and tie-break, multi-values, enable-wins, counters, ORMap
 * nested removal and type collisions, restore on every type, events.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { bytesEqual } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { HybridClock } from '../../crdt/hlc.ts'
import type { Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { createReplica } from '../../crdt/registry.ts'
import { CausalContext } from '../../crdt/causal/causal-context.ts'
import { DotMap, type DotSet } from '../../crdt/causal/dot-store.ts'
import { joinStates } from '../../crdt/types/causal-replica.ts'
import { DotAllocator } from '../../crdt/types/dot-allocator.ts'
import { orsetAdd, orsetRemove } from '../../crdt/types/index.ts'
import { encodeState } from '../../crdt/types/state-codec.ts'
import { NATIVE_TYPES, type NativeType } from '../../crdt/catalog.ts'
import {
  EWFlagReplica,
  GCounterReplica,
  GSetReplica,
  LWWRegisterReplica,
  MVRegisterReplica,
  ORMapReplica,
  ORSetReplica,
  PNCounterReplica,
} from '../../crdt/types/index.ts'
import { LAW_SEED, pull } from '../../testing/index.ts'
import { createNative, nativeOp } from './native-ops.ts'
import { localDelta } from '../helpers/local-delta.ts'

const opts = (id: string, wall = 1_000) => ({ agentId: agentId(id), clock: new HybridClock(() => wall) })

/** Exchanges deltas both ways until both are equal. */
function sync(a: Replica, b: Replica): void {
  pull(a, b)
  pull(b, a)
  assert.deepEqual(a.value(), b.value())
  assert.ok(bytesEqual(a.snapshot(), b.snapshot()))
}

function rejectsWith(code: string, fn: () => unknown): void {
  assert.throws(fn, (error: unknown) => isConcordError(error) && error.code === code)
}

describe('ORSet', () => {
  it('add wins over a concurrent remove; a remove removes what it observed', () => {
    const a = new ORSetReplica<string>(opts('a'))
    const b = new ORSetReplica<string>(opts('b'))
    a.add('x')
    sync(a, b)
    b.delete('x')
    a.add('x') // concurrent re-add
    sync(a, b)
    assert.deepEqual(a.values(), ['x'])
    b.delete('x') // now b has observed a's new add
    sync(a, b)
    assert.deepEqual(a.values(), [])
    assert.equal(a.size, 0)
  })

  it('a remove reaches a replica that holds the element (deltaSince carries removals)', () => {
    const a = new ORSetReplica<string>(opts('a'))
    const b = new ORSetReplica<string>(opts('b'))
    for (const e of ['x', 'y', 'z']) a.add(e)
    sync(a, b)
    a.delete('y')
    const delta = a.deltaSince(b.version())
    assert.ok(delta)
    assert.equal(b.applyDelta(delta), true)
    assert.deepEqual(b.values(), ['x', 'z'])
    assert.equal(a.deltaSince(b.version()), null, 'nothing left to send once converged')
    assert.equal(b.deltaSince(a.version()), null)
  })

  it('element identity is canonical JSON (object key order does not matter)', () => {
    const a = new ORSetReplica(opts('a'))
    a.add({ b: 2, a: 1 })
    assert.ok(a.has({ a: 1, b: 2 }))
    a.add({ a: 1, b: 2 })
    assert.equal(a.size, 1)
    assert.equal(a.delete({ b: 2, a: 1 }), true)
    assert.equal(a.size, 0)
    assert.equal(a.delete('absent'), false, 'removing an absent element does nothing')
  })

  it('rejects values that are not JSON', () => {
    const a = new ORSetReplica(opts('a'))
    for (const bad of [undefined, NaN, Infinity, () => 1, new Date(0), 10n]) {
      rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => a.add(bad as never))
    }
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => a.add(cyclic as never))
    assert.equal(a.size, 0)
  })
})

describe('GSet', () => {
  it('adds once and never removes; a forged removal delta is rejected', () => {
    const a = new GSetReplica<string>(opts('a'))
    assert.equal(a.add('x'), true)
    assert.equal(a.add('x'), false)
    const forged = encodeState('gset', { store: new DotMap(), ctx: CausalContext.of([{ replica: 'a', counter: 1 }]) })
    const before = a.snapshot()
    rejectsWith(ErrorCodes.DECODE_ERROR, () => a.applyDelta(forged))
    assert.ok(bytesEqual(before, a.snapshot()))
    assert.deepEqual(a.values(), ['x'])
  })
})

describe('LWWRegister', () => {
  it('the later HLC wins; the clock observes remote timestamps', () => {
    const a = new LWWRegisterReplica<string>(opts('a', 5_000))
    const b = new LWWRegisterReplica<string>(opts('b', 1_000)) // b's physical clock is behind
    a.set('from a')
    b.set('from b') // concurrent, earlier timestamp
    sync(a, b)
    assert.equal(a.value(), 'from a')
    b.set('b again') // b has observed a's timestamp, so its next write orders after it
    sync(a, b)
    assert.equal(a.value(), 'b again')
  })

  it('equal timestamps are ordered by agent id', () => {
    const a = new LWWRegisterReplica<number>(opts('a'))
    const z = new LWWRegisterReplica<number>(opts('z'))
    a.set(1)
    z.set(2)
    sync(a, z)
    assert.equal(a.value(), 2, 'replica "z" > "a" breaks the tie')
  })

  it('is null before the first write and after clear()', () => {
    const a = new LWWRegisterReplica<number>(opts('a'))
    assert.equal(a.value(), null)
    assert.equal(a.clear(), false)
    a.set(3)
    a.clear()
    assert.equal(a.value(), null)
  })
})

describe('MVRegister', () => {
  it('keeps concurrent values (sorted, distinct); a later write supersedes them', () => {
    const a = new MVRegisterReplica(opts('a'))
    const b = new MVRegisterReplica(opts('b'))
    const c = new MVRegisterReplica(opts('c'))
    a.set('x')
    b.set('y')
    c.set('x')
    sync(a, b)
    sync(a, c)
    sync(b, c)
    assert.deepEqual(a.values(), ['x', 'y'])
    b.set({ merged: true })
    sync(a, b)
    assert.deepEqual(a.values(), [{ merged: true }])
  })
})

describe('EWFlag', () => {
  it('enable wins over a concurrent disable; a disable that saw the enable turns it off', () => {
    const a = new EWFlagReplica(opts('a'))
    const b = new EWFlagReplica(opts('b'))
    a.enable()
    sync(a, b)
    b.disable()
    a.enable()
    sync(a, b)
    assert.equal(a.enabled(), true)
    b.disable()
    sync(a, b)
    assert.equal(a.enabled(), false)
    assert.equal(a.disable(), false)
  })
})

describe('counters', () => {
  it('concurrent increments add up; PN goes negative', () => {
    const a = new PNCounterReplica(opts('a'))
    const b = new PNCounterReplica(opts('b'))
    a.increment(5)
    b.decrement(7)
    b.increment()
    sync(a, b)
    assert.equal(a.value(), -1)
    const g = new GCounterReplica(opts('g'))
    const h = new GCounterReplica(opts('h'))
    g.increment(2)
    h.increment(3)
    g.increment()
    sync(g, h)
    assert.equal(h.value(), 6)
  })

  it('an increment supersedes the old total: its delta applied out of order still counts once per replica', () => {
    const a = new GCounterReplica(opts('a'))
    const deltas = [localDelta(a, () => a.increment(1))!, localDelta(a, () => a.increment(1))!, localDelta(a, () => a.increment(1))!]
    const b = new GCounterReplica(opts('b'))
    b.applyDelta(deltas[2])
    assert.equal(b.value(), 3)
    assert.equal(b.applyDelta(deltas[0]), true, 'the old dot is news to the context')
    assert.equal(b.value(), 3, 'but it is superseded: it does not count')
  })

  it('rejects bad amounts; 0 does nothing', () => {
    const a = new PNCounterReplica(opts('a'))
    assert.equal(a.increment(0), false)
    for (const bad of [-1, 1.5, NaN, 2 ** 60]) rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => a.increment(bad))
    assert.equal(a.value(), 0)
  })
})

describe('ORMap', () => {
  it('nested fields of every type, values as plain JSON', () => {
    const m = new ORMapReplica(opts('m'))
    m.set('title', 'plan')
    m.counter('done').increment(2)
    m.gcounter('seen').increment()
    m.orset('tags').add('x')
    m.gset('log').add('started')
    m.flag('active').enable()
    m.mvRegister('owner').set('ann')
    m.map('sub').set('deep', [1, 2])
    m.map('sub').map('deeper').counter('n').decrement()
    assert.deepEqual(m.value(), {
      active: true,
      done: 2,
      log: ['started'],
      owner: ['ann'],
      seen: 1,
      sub: { deep: [1, 2], deeper: { n: -1 } },
      tags: ['x'],
      title: 'plan',
    })
    assert.deepEqual(m.keys(), ['active', 'done', 'log', 'owner', 'seen', 'sub', 'tags', 'title'])
    assert.equal(m.get('missing'), undefined)
    assert.equal(m.has('tags'), true)
  })

  it('delete is observed-remove: a concurrent nested update survives, the rest goes', () => {
    const a = new ORMapReplica(opts('a'))
    const b = new ORMapReplica(opts('b'))
    a.map('task').set('title', 'x')
    a.map('task').counter('votes').increment(3)
    sync(a, b)
    b.delete('task')
    a.map('task').counter('votes').increment() // concurrent with the delete
    sync(a, b)
    assert.deepEqual(a.value(), { task: { votes: 4 } }, 'the title was observed and removed; the concurrent increment survives with its total')
    b.delete('task')
    sync(a, b)
    assert.deepEqual(a.value(), {})
    a.map('task').counter('votes').increment()
    assert.deepEqual(a.value(), { task: { votes: 1 } }, 'after a full removal, a counter starts again from zero')
  })

  it('concurrent puts of different types under one name live side by side', () => {
    const a = new ORMapReplica(opts('a'))
    const b = new ORMapReplica(opts('b'))
    a.set('x', 'text')
    b.counter('x').increment(4)
    sync(a, b)
    assert.deepEqual(a.fieldTypes('x'), ['lww-register', 'pncounter'])
    assert.equal(a.get('x'), 'text', 'the LWW value shows first (FIELD_PRECEDENCE)')
    assert.equal(a.counter('x').value(), 4, 'the counter stays reachable')
    a.register('x').clear()
    assert.equal(a.get('x'), 4)
    a.delete('x')
    assert.equal(a.has('x'), false)
  })

  it('emptied nested CRDTs disappear from the map', () => {
    const m = new ORMapReplica(opts('m'))
    m.flag('f').enable()
    m.orset('s').add(1)
    m.flag('f').disable()
    m.orset('s').delete(1)
    assert.deepEqual(m.value(), {})
  })
})

describe('restore', () => {
  it('brings every type back to a past value with one replicated change', () => {
    const types: NativeType[] = ['pncounter', 'orset', 'lww-register', 'mv-register', 'ormap', 'ewflag']
    for (const type of types) {
      fc.assert(
        fc.property(fc.array(nativeOp(type), { maxLength: 8 }), fc.array(nativeOp(type), { minLength: 1, maxLength: 8 }), (before, after) => {
          const r = createNative(type, 'r')
          for (const op of before) op(r)
          const past = createNative(type, 'r', r.snapshot())
          const other = createNative(type, 'o')
          for (const op of after) op(r)
          pull(other, r)
          const events: boolean[] = []
          r.events.on('change', (e) => events.push(e.local))
          const delta = r.restore(past)
          assert.deepEqual(r.value(), past.value(), `${type}: value restored`)
          if (delta === null) {
            assert.deepEqual(events, [])
          } else {
            assert.deepEqual(events, [true])
            other.applyDelta(delta)
            assert.deepEqual(other.value(), past.value(), `${type}: the restoring delta replicates`)
          }
          assert.equal(r.restore(past), null, 'restoring again changes nothing')
        }),
        { seed: LAW_SEED, numRuns: 40 },
      )
    }
  })

  it('grow-only types restore forward and refuse to shrink', () => {
    const g = new GCounterReplica(opts('g'))
    g.increment(2)
    const past = new GCounterReplica({ ...opts('g'), snapshot: g.snapshot() })
    g.increment(3)
    rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => g.restore(past))
    const later = new GCounterReplica({ ...opts('g'), snapshot: g.snapshot() })
    const fresh = new GCounterReplica(opts('g2'))
    assert.ok(fresh.restore(later))
    assert.equal(fresh.value(), 5)
    const s = new GSetReplica(opts('s'))
    s.add('a')
    const pastSet = new GSetReplica({ ...opts('s'), snapshot: s.snapshot() })
    s.add('b')
    rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => s.restore(pastSet))
    assert.deepEqual(s.values(), ['a', 'b'])
    rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => s.restore(new ORSetReplica(opts('x'))))
  })
})

describe('replica contract', () => {
  it('events: local mutations and changing remote deltas, with origin; nothing for a no-op', () => {
    const a = new ORSetReplica<string>(opts('a'))
    const b = new ORSetReplica<string>(opts('b'))
    const seen: Array<{ local: boolean; origin?: unknown }> = []
    b.events.on('change', (e) => seen.push({ local: e.local, origin: e.origin }))
    const delta = localDelta(a, () => a.add('x'))!
    assert.equal(b.applyDelta(delta, 'peer-1'), true)
    assert.equal(b.applyDelta(delta, 'peer-2'), false)
    b.add('y')
    assert.deepEqual(seen, [
      { local: false, origin: 'peer-1' },
      { local: true, origin: undefined },
    ])
  })

  it('a delta, snapshot or version of another type is a DecodeError', () => {
    const set = new ORSetReplica(opts('a'))
    set.add(1)
    const counter = new PNCounterReplica(opts('a'))
    counter.increment()
    rejectsWith(ErrorCodes.DECODE_ERROR, () => counter.applyDelta(set.snapshot()))
    rejectsWith(ErrorCodes.DECODE_ERROR, () => counter.deltaSince(set.version()))
    rejectsWith(ErrorCodes.DECODE_ERROR, () => createReplica('pncounter', { agentId: agentId('x'), snapshot: set.snapshot() }))
    rejectsWith(ErrorCodes.INVALID_ARGUMENT, () => createReplica('nope' as never, { agentId: agentId('x') }))
  })

  it('every type converges to deltaSince === null both ways', () => {
    for (const type of NATIVE_TYPES) {
      fc.assert(
        fc.property(fc.array(nativeOp(type), { maxLength: 10 }), fc.array(nativeOp(type), { maxLength: 10 }), (x, y) => {
          const a = createNative(type, 'a')
          const b = createNative(type, 'b')
          for (const op of x) op(a)
          for (const op of y) op(b)
          sync(a, b)
          assert.equal(a.deltaSince(b.version()), null)
          assert.equal(b.deltaSince(a.version()), null)
        }),
        { seed: LAW_SEED, numRuns: 30 },
      )
    }
  })

  it('the resync delta grows with the changes, not with the state', () => {
    for (const writers of [1, 4]) {
      const a = new ORSetReplica<string>(opts('a'))
      const helpers = Array.from({ length: writers }, (_, k) => new ORSetReplica<string>(opts(`w${k}`)))
      for (let i = 0; i < 10_000; i++) helpers[i % writers].add(`element-${i}`)
      for (const h of helpers) pull(a, h)
      for (let i = 0; i < 10_000; i += 97) a.delete(`element-${i}`) // an old, scattered history of removals
      const b = new ORSetReplica<string>({ ...opts('b'), snapshot: a.snapshot() })
      for (let k = 0; k < 5; k++) {
        a.add(`new-${k}`)
        a.delete(`element-${k * 1_999 + 1}`)
      }
      const delta = a.deltaSince(b.version())!
      assert.ok(delta.length < 512, `${writers} writer(s): ${delta.length} bytes to resync 10 changes`)
      b.applyDelta(delta)
      assert.deepEqual(b.values(), a.values())
      assert.equal(a.deltaSince(b.version()), null)
    }
  })

  it('pure cores: mutators and joinStates never change their inputs', () => {
    const empty = { store: new DotMap(), ctx: new CausalContext() }
    const a1 = orsetAdd(empty.store, new DotAllocator('a', empty.ctx), 'x')
    const stateA = joinStates(empty, a1)
    const snapshotA = encodeState('orset', stateA)
    const b1 = orsetAdd(empty.store, new DotAllocator('b', empty.ctx), 'x')
    const removeA = orsetRemove(stateA.store, 'x')!
    const before = [encodeState('orset', b1), encodeState('orset', removeA)]
    const joined = joinStates(joinStates(stateA, b1), removeA)
    assert.ok(bytesEqual(encodeState('orset', stateA), snapshotA))
    assert.ok(bytesEqual(encodeState('orset', b1), before[0]))
    assert.ok(bytesEqual(encodeState('orset', removeA), before[1]))
    assert.deepEqual([...joined.store.entries.keys()], ['"x"'], "b's concurrent add survives a's remove")
    assert.deepEqual((joined.store.entries.get('"x"') as DotSet).dots, [{ replica: 'b', counter: 1 }])
    assert.equal(empty.store.entries.size, 0)
  })
})
