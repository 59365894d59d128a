/**
 * The Yjs replica's change deltas and local runs (crdt/documents/yjs-replica.ts,
 * yjs-transaction-update.ts): every local change's `delta` is byte for byte
 * the update Yjs gives its 'update' observers (read eagerly with several
 * listeners, or on read while a run's holder listens alone); a run's
 * `close()` is the join of exactly the local changes made while it was open,
 * remote deltas applied meanwhile excluded. Random operations (fast-check,
 * fixed seed), remote deltas from a second replica interleaved.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import * as Y from 'yjs'
import { bytesEqual } from '../../../crdt/codec.ts'
import type { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import { createReplica } from '../../../crdt/registry.ts'
import type { ChangeEvent, LocalRun } from '../../../crdt/replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { yjsOp } from './document-ops.ts'

const SEED = 20_261_129

function yjs(id: string, clientId: number): YjsReplica {
  return createReplica('yjs', { agentId: agentId(id), clientId } as never) as YjsReplica
}

/** A step: a local operation on `a`, or one on `b` whose delta `a` applies. */
const step = fc.record({ remote: fc.boolean(), op: yjsOp })

/** Yjs' own 'update' bytes of `a`'s local transactions (not those of its applyDelta). */
function yjsLocalUpdates(a: YjsReplica): Uint8Array[] {
  const updates: Uint8Array[] = []
  a.doc.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin === null || origin === undefined) updates.push(update)
  })
  return updates
}

describe('yjs replica: change deltas and local runs', () => {
  for (const listeners of [1, 2]) {
    it(`a local change's delta is the update Yjs gives 'update' observers (${listeners} change listener(s), a run open)`, () => {
      fc.assert(
        fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) => {
          const a = yjs('a', 1)
          const b = yjs('b', 2)
          const ours: Uint8Array[] = []
          a.on('change', (event: ChangeEvent) => {
            if (event.local) ours.push(event.delta)
          })
          if (listeners === 2) a.on('change', () => undefined)
          const expected = yjsLocalUpdates(a)
          const fromB: Uint8Array[] = []
          b.on('change', (event) => {
            if (event.local) fromB.push(event.delta)
          })
          const run = a.openLocalRun()
          for (const { remote, op } of steps) {
            if (!remote) {
              op(a)
              continue
            }
            const before = fromB.length
            op(b)
            for (const delta of fromB.slice(before)) a.applyDelta(delta)
          }
          run.close()
          assert.equal(ours.length, expected.length)
          for (let i = 0; i < ours.length; i++) assert.ok(bytesEqual(ours[i], expected[i]), `change ${i}`)
        }),
        { seed: SEED, numRuns: 80 },
      )
    })
  }

  it('a run is the join of the local changes made while it was open, without the remote deltas applied meanwhile', () => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 10 }),
        fc.array(step, { minLength: 1, maxLength: 30 }),
        fc.array(step, { maxLength: 5 }),
        (prefix, during, after) => {
          const a = yjs('a', 1)
          const b = yjs('b', 2)
          const fromB: Uint8Array[] = []
          b.on('change', (event) => {
            if (event.local) fromB.push(event.delta)
          })
          a.on('change', () => undefined) // the run's holder, alone: deltas on read
          const remoteDuring: Uint8Array[] = []
          const play = (steps: typeof prefix, remotes?: Uint8Array[]): void => {
            for (const { remote, op } of steps) {
              if (!remote) {
                op(a)
                continue
              }
              const before = fromB.length
              op(b)
              for (const delta of fromB.slice(before)) {
                a.applyDelta(delta)
                remotes?.push(delta)
              }
            }
          }
          play(prefix)
          const start = Y.encodeStateAsUpdate(a.doc)
          const startVector = Y.decodeStateVector(Y.encodeStateVector(a.doc))
          const run: LocalRun = a.openLocalRun()
          play(during, remoteDuring)
          const delta = run.close()
          assert.equal(run.close(), delta, 'close is idempotent')
          play(after)
          const end = yjs('end', 3)
          Y.applyUpdate(end.doc, start)
          for (const remote of remoteDuring) Y.applyUpdate(end.doc, remote)
          if (delta !== null) Y.applyUpdate(end.doc, delta)
          if (delta !== null) {
            // No struct of b's client in the run's delta, and only structs a made during the run.
            const meta = Y.parseUpdateMeta(delta)
            assert.equal(meta.to.get(2), undefined, 'no remote struct in the run')
            if (meta.from.has(1)) assert.ok(meta.from.get(1)! >= (startVector.get(1) ?? 0), 'no struct from before the run')
          }
          // The state `a` had at the run's end (the `after` steps excluded), replayed afresh.
          assert.deepEqual(end.value(), aValueAtRunEnd(prefix, during))
          assert.ok(Y.equalSnapshots(Y.snapshot(end.doc), snapshotAtRunEnd(prefix, during)), 'same state vector and delete set as a at the run end')
        },
      ),
      { seed: SEED, numRuns: 80 },
    )
  })

  it('with no local change while open, a run is null', () => {
    const a = yjs('a', 1)
    const b = yjs('b', 2)
    const fromB: Uint8Array[] = []
    b.on('change', (event) => fromB.push(event.delta))
    const run = a.openLocalRun()
    b.doc.getText('text').insert(0, 'x')
    a.applyDelta(fromB[0])
    assert.equal(run.close(), null)
  })
})

/** Replays the same steps on fresh replicas (same client ids) up to the run's end. */
function replayToRunEnd(prefix: ReadonlyArray<{ remote: boolean; op: (r: YjsReplica) => void }>, during: typeof prefix): YjsReplica {
  const a = yjs('a', 1)
  const b = yjs('b', 2)
  const fromB: Uint8Array[] = []
  b.on('change', (event) => {
    if (event.local) fromB.push(event.delta)
  })
  for (const { remote, op } of [...prefix, ...during]) {
    if (!remote) {
      op(a)
      continue
    }
    const before = fromB.length
    op(b)
    for (const delta of fromB.slice(before)) a.applyDelta(delta)
  }
  return a
}

function aValueAtRunEnd(prefix: Parameters<typeof replayToRunEnd>[0], during: Parameters<typeof replayToRunEnd>[1]): unknown {
  return replayToRunEnd(prefix, during).value()
}

function snapshotAtRunEnd(prefix: Parameters<typeof replayToRunEnd>[0], during: Parameters<typeof replayToRunEnd>[1]): Y.Snapshot {
  return Y.snapshot(replayToRunEnd(prefix, during).doc)
}
