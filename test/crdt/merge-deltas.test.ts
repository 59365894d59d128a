/**
 * mergeDeltas of every type: a replica's `change` deltas (local ones, and
 * remote ones it applied), cut into random runs and each run merged, bring a
 * fresh replica, or one that already holds a prefix of them, to the state
 * that applying them one by one gives. For Yjs, a run of one client's
 * transactions takes the fast path, byte for byte what `Y.mergeUpdates`
 * gives. Bad input: typed errors.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import * as Y from 'yjs'
import { bytesEqual } from '../../crdt/codec.ts'
import { mergeYjsDeltas } from '../../crdt/documents/merge-deltas.ts'
import { mergeYjsRun } from '../../crdt/documents/yjs-merge.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { isConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { createReplica, deltaMerger, mergeDeltas, replicaFactories } from '../../crdt/registry.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { NATIVE_TYPES } from '../../crdt/catalog.ts'
import { automergeOp, opsInitial, yjsOp } from './documents/document-ops.ts'
import { createNative, nativeOp } from './native-ops.ts'
import type { RandomOp } from '../../testing/index.ts'

const SEED = 20_251_129

function create(type: ReplicaType, id: string): Replica {
  if (type === 'automerge') return createReplica(type, { agentId: agentId(id), initial: opsInitial() } as never)
  if (type === 'yjs') return createReplica(type, { agentId: agentId(id) })
  return createNative(type, id)
}

function opOf(type: ReplicaType): fc.Arbitrary<RandomOp> {
  if (type === 'yjs') return yjsOp
  if (type === 'automerge') return automergeOp
  return nativeOp(type)
}

/** Same value and version. */
function assertSame(a: Replica, b: Replica, context: string): void {
  assert.deepEqual(a.value(), b.value(), context)
  assert.ok(bytesEqual(a.version(), b.version()), `${context}: versions differ`)
}

/** Cuts `list` into runs at the given (sorted, deduplicated) positions. */
function runs<T>(list: readonly T[], cuts: readonly number[]): T[][] {
  const points = [...new Set(cuts.map((c) => c % (list.length + 1)))].sort((x, y) => x - y)
  const out: T[][] = []
  let from = 0
  for (const point of [...points, list.length]) {
    if (point > from) out.push(list.slice(from, point))
    from = Math.max(from, point)
  }
  return out
}

const TYPES: ReplicaType[] = [...NATIVE_TYPES, 'yjs', 'automerge']

describe('mergeDeltas', () => {
  for (const type of TYPES) {
    it(`${type}: merged runs of a replica's deltas give the state applying them one by one gives`, () => {
      const step = fc.record({ op: opOf(type), remote: fc.boolean(), pull: fc.boolean() })
      fc.assert(
        fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), fc.array(fc.nat(), { maxLength: 6 }), fc.nat(), (steps, cuts, prefixSeed) => {
          const a = create(type, 'a')
          const b = create(type, 'b')
          const deltas: Uint8Array[] = []
          a.events.on('change', (event) => deltas.push(event.delta))
          for (const { op, remote, pull } of steps) {
            if (remote) op(b)
            else op(a)
            if (pull) {
              const delta = b.deltaSince(a.version())
              if (delta) a.applyDelta(delta)
            }
          }
          const sequential = create(type, 'c')
          for (const delta of deltas) sequential.applyDelta(delta)
          assertSame(sequential, a, 'one by one')
          const merged = create(type, 'd')
          for (const run of runs(deltas, cuts)) merged.applyDelta(mergeDeltas(type, run))
          assertSame(merged, a, 'merged runs')
          // A replica that already holds a prefix: the merge of everything is idempotent on it.
          if (deltas.length > 0) {
            const partial = create(type, 'e')
            const prefix = prefixSeed % (deltas.length + 1)
            for (const delta of deltas.slice(0, prefix)) partial.applyDelta(delta)
            partial.applyDelta(mergeDeltas(type, deltas))
            assertSame(partial, a, 'prefix then the merge of all')
          }
        }),
        { seed: SEED, numRuns: 40 },
      )
    })
  }

  it("yjs: a run of one client's transactions takes the fast path, and gives what Y.mergeUpdates gives", () => {
    fc.assert(
      fc.property(fc.array(yjsOp, { minLength: 2, maxLength: 30 }), fc.array(fc.nat(), { maxLength: 5 }), (ops, cuts) => {
        const replica = create('yjs', 'a') as YjsReplica
        const updates: Uint8Array[] = []
        replica.doc.on('update', (update: Uint8Array) => updates.push(update))
        for (const op of ops) op(replica)
        const fastDoc = new Y.Doc()
        const theirDoc = new Y.Doc()
        for (const run of runs(updates, cuts)) {
          const fast = mergeYjsRun(run)
          assert.ok(fast, 'the fast path took the run')
          Y.applyUpdate(fastDoc, fast)
          Y.applyUpdate(theirDoc, Y.mergeUpdates(run))
        }
        // Y.mergeUpdates re-encodes each struct (it drops a parentSub flag Yjs ignores after an origin); the states are equal.
        assert.ok(bytesEqual(Y.encodeStateAsUpdate(fastDoc), Y.encodeStateAsUpdate(theirDoc)), 'same state as Y.mergeUpdates')
        assert.ok(bytesEqual(Y.encodeStateAsUpdate(fastDoc), Y.encodeStateAsUpdate(replica.doc)), 'same state as the source')
      }),
      { seed: SEED, numRuns: 60 },
    )
  })

  it('yjs: typing (one character per transaction) merges byte for byte as Y.mergeUpdates does', () => {
    const doc = new Y.Doc()
    const updates: Uint8Array[] = []
    doc.on('update', (update: Uint8Array) => updates.push(update))
    const text = doc.getText('t')
    for (let i = 0; i < 300; i++) {
      if (i % 7 === 6) text.delete((i * 13) % text.length, 1)
      else text.insert((i * 31) % (text.length + 1), String.fromCharCode(97 + (i % 26)))
    }
    for (let from = 0; from < updates.length; from += 37) {
      const run = updates.slice(from, from + 37)
      assert.ok(bytesEqual(mergeYjsRun(run)!, Y.mergeUpdates(run)), `run at ${from}`)
    }
  })

  it('yjs: updates of several clients or with a gap fall back to Y.mergeUpdates', () => {
    const a = new Y.Doc()
    const b = new Y.Doc()
    const fromA: Uint8Array[] = []
    const fromB: Uint8Array[] = []
    a.on('update', (u: Uint8Array) => fromA.push(u))
    b.on('update', (u: Uint8Array) => fromB.push(u))
    a.getText('t').insert(0, 'ab')
    a.getText('t').insert(2, 'cd')
    a.getText('t').insert(4, 'ef')
    b.getText('t').insert(0, 'xy')
    assert.equal(mergeYjsRun([fromA[0], fromB[0]]), undefined, 'two clients')
    assert.equal(mergeYjsRun([fromA[0], fromA[2]]), undefined, 'a gap')
    assert.equal(mergeYjsRun([fromA[1], fromA[0]]), undefined, 'out of order')
    const merged = mergeYjsDeltas([fromA[2], fromB[0], fromA[0], fromA[1]])
    const doc = new Y.Doc()
    Y.applyUpdate(doc, merged)
    const expected = new Y.Doc()
    for (const u of [...fromA, ...fromB]) Y.applyUpdate(expected, u)
    assert.equal(doc.getText('t').toString(), expected.getText('t').toString())
  })

  it('every registered type has a merge; bad input gets typed errors', () => {
    for (const type of TYPES) {
      assert.equal(typeof replicaFactories[type]?.mergeDeltas, 'function', type)
      assert.equal(typeof deltaMerger(type), 'function', type)
      assert.throws(() => mergeDeltas(type, []), RangeError, type)
    }
    assert.equal(deltaMerger('nope' as ReplicaType), undefined)
    assert.throws(
      () => mergeDeltas('nope' as ReplicaType, [new Uint8Array(2)]),
      (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
    )
    const counter = createNative('gcounter', 'a')
    const deltas: Uint8Array[] = []
    counter.events.on('change', (event) => deltas.push(event.delta))
    ;(counter as unknown as { increment(n: number): void }).increment(1)
    assert.throws(
      () => mergeDeltas('gcounter', [deltas[0], new Uint8Array([1, 2, 3])]),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
    )
    assert.throws(
      () => mergeDeltas('orset', [deltas[0], deltas[0]]),
      (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
      'a delta of another type',
    )
    // A single delta comes back as it is.
    assert.equal(mergeDeltas('gcounter', deltas), deltas[0])
  })
})
