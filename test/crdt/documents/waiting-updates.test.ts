/**
 * Document updates whose dependencies are missing: held outside the
 * library within budgets (per document, per sender), released once when
 * the dependency arrives (merged into one change event), dropped and
 * counted over budget; a later deltaSince round brings what was dropped.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { WaitingBudget } from '../../../crdt/documents/waiting-room.ts'
import { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import type { ChangeEvent } from '../../../crdt/replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'

/** Yjs updates of one client, each a separate transaction appending to one text (each depends on the one before). */
function yjsChain(count: number, text = 'abc'): { doc: Y.Doc; updates: Uint8Array[] } {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const t = doc.getText('t')
  for (let i = 0; i < count; i++) t.insert(t.length, `${text}${i};`)
  return { doc, updates }
}

test('yjs: updates waiting for a missing first one are held outside Yjs, then integrated once, in one change event', () => {
  const { doc, updates } = yjsChain(200)
  const replica = new YjsReplica({ agentId: agentId('r') })
  const events: ChangeEvent[] = []
  replica.on('change', (event) => events.push(event))
  for (const update of updates.slice(1)) assert.equal(replica.applyDelta(update, 'peer'), false)
  assert.equal(replica.waitingStats().updates, 199)
  assert.equal(replica.doc.store.pendingStructs, null, 'nothing is pending inside Yjs')
  assert.deepEqual(replica.value(), {})
  assert.equal(events.length, 0)
  assert.equal(replica.applyDelta(updates[0], 'peer'), true)
  assert.equal(replica.doc.getText('t').toString(), doc.getText('t').toString())
  assert.deepEqual(replica.waitingStats(), { updates: 0, bytes: 0, dropped: 0, released: 199, unresolvable: 0 })
  assert.equal(events.length, 1, 'one change event for the delta and what it released')
  const third = new YjsReplica({ agentId: agentId('t') })
  third.applyDelta(events[0].delta)
  assert.equal(third.doc.getText('t').toString(), doc.getText('t').toString(), 'the event carries every released update')
})

test('yjs: waiting on several clients and on deletions: released only when every requirement is met', () => {
  const a = new Y.Doc()
  const b = new Y.Doc()
  const fromA: Uint8Array[] = []
  const fromB: Uint8Array[] = []
  a.on('update', (u: Uint8Array) => fromA.push(u))
  b.on('update', (u: Uint8Array) => fromB.push(u))
  a.getText('t').insert(0, 'hello')
  Y.applyUpdate(b, fromA[0])
  fromB.length = 0 // (b's 'update' also reports what it received)
  b.getText('t').insert(5, ' world') // needs a's insert
  b.getText('t').delete(0, 2) // deletes a's characters
  const replica = new YjsReplica({ agentId: agentId('r') })
  assert.equal(replica.applyDelta(fromB[1]), false, "the deletion waits for a's insert")
  assert.equal(replica.applyDelta(fromB[0]), false, "the insert waits for a's insert")
  assert.equal(replica.waitingStats().updates, 2)
  assert.equal(replica.applyDelta(fromA[0]), true)
  assert.equal(replica.doc.getText('t').toString(), b.getText('t').toString())
  assert.equal(replica.waitingStats().updates, 0)
})

test('yjs: over the per-document budget an update is dropped and counted; a later deltaSince round converges', () => {
  const { doc, updates } = yjsChain(30)
  const replica = new YjsReplica({ agentId: agentId('r'), limits: { maxWaitingUpdates: 10 } })
  for (const update of updates.slice(1)) replica.applyDelta(update)
  assert.deepEqual({ ...replica.waitingStats(), bytes: 0 }, { updates: 10, bytes: 0, dropped: 19, released: 0, unresolvable: 0 })
  replica.applyDelta(updates[0])
  assert.equal(replica.waitingStats().released, 10)
  assert.notEqual(replica.doc.getText('t').toString(), doc.getText('t').toString(), 'the dropped updates are missing')
  // Anti-entropy: the sender's delta for our version brings exactly what we lack.
  const missing = Y.encodeStateAsUpdate(doc, replica.version())
  assert.equal(replica.applyDelta(missing), true)
  assert.equal(replica.doc.getText('t').toString(), doc.getText('t').toString())
})

test("yjs: over the per-sender budget (shared by documents) a sender's updates are dropped, another sender's still held", () => {
  const budget = new WaitingBudget({ maxUpdates: 5, maxBytes: 1 << 20 }, (origin) => String(origin))
  const one = new YjsReplica({ agentId: agentId('one'), waitingBudget: budget })
  const two = new YjsReplica({ agentId: agentId('two'), waitingBudget: budget })
  const chainA = yjsChain(5).updates
  const chainB = yjsChain(5).updates
  for (const update of chainA.slice(1)) one.applyDelta(update, 'mallory')
  for (const update of chainB.slice(1)) two.applyDelta(update, 'mallory')
  assert.deepEqual(budget.heldBy('mallory'), { updates: 5, bytes: budget.heldBy('mallory').bytes })
  assert.equal(one.waitingStats().dropped + two.waitingStats().dropped, 3)
  const third = new YjsReplica({ agentId: agentId('three'), waitingBudget: budget })
  const chainC = yjsChain(3).updates
  assert.equal(third.applyDelta(chainC[2], 'alice'), false)
  assert.equal(third.waitingStats().updates, 1, 'another sender has its own budget')
  one.applyDelta(chainA[0], 'mallory')
  assert.equal(budget.heldBy('mallory').updates, 5 - 4, 'released updates give their budget back')
  assert.equal(budget.stats().released, 4)
})

test('yjs: an update that names a client that never comes only waits within the budget', () => {
  const replica = new YjsReplica({ agentId: agentId('r'), limits: { maxWaitingUpdates: 50, maxWaitingBytes: 64 * 1024 } })
  for (let i = 0; i < 500; i++) {
    const doc = new Y.Doc()
    doc.clientID = 1000 + i
    const updates: Uint8Array[] = []
    doc.on('update', (u: Uint8Array) => updates.push(u))
    doc.getText('t').insert(0, 'x'.repeat(100))
    doc.getText('t').insert(50, 'y')
    replica.applyDelta(updates[1])
  }
  const stats = replica.waitingStats()
  assert.equal(stats.updates, 50)
  assert.equal(stats.dropped, 450)
  assert.ok(stats.bytes <= 64 * 1024)
})

test('automerge: changes waiting for a missing dependency are held outside Automerge, then applied once, in one change event', () => {
  let source = A.init<Record<string, number>>()
  const changes: Uint8Array[] = []
  for (let i = 0; i < 100; i++) {
    source = A.change(source, (d) => {
      d[`k${i % 7}`] = i
    })
    changes.push(A.getLastLocalChange(source)!)
  }
  const replica = new AutomergeReplica({ agentId: agentId('r') })
  const events: ChangeEvent[] = []
  replica.on('change', (event) => events.push(event))
  for (const change of changes.slice(1).reverse()) assert.equal(replica.applyDelta(change), false)
  assert.equal(replica.waitingStats().updates, 99)
  assert.deepEqual(A.getMissingDeps(replica.doc, []), [], 'nothing waits inside Automerge')
  assert.equal(replica.applyDelta(changes[0]), true)
  assert.deepEqual(replica.value(), A.toJS(source))
  assert.equal(events.length, 1)
  const third = new AutomergeReplica({ agentId: agentId('t') })
  third.applyDelta(events[0].delta)
  assert.deepEqual(third.value(), A.toJS(source))
  assert.equal(replica.waitingStats().released, 99)
})

test('automerge: over budget a change is dropped and counted; deltaSince brings it later', () => {
  let source = A.init<Record<string, number>>()
  const changes: Uint8Array[] = []
  for (let i = 0; i < 20; i++) {
    source = A.change(source, (d) => {
      d[`k${i}`] = i
    })
    changes.push(A.getLastLocalChange(source)!)
  }
  const sender = new AutomergeReplica({ agentId: agentId('s'), snapshot: new AutomergeReplica({ agentId: agentId('x') }).snapshot() })
  sender.applyDelta(A.save(source))
  const replica = new AutomergeReplica({ agentId: agentId('r'), limits: { maxWaitingUpdates: 5 } })
  for (const change of changes.slice(1)) replica.applyDelta(change)
  assert.equal(replica.waitingStats().dropped, 14)
  replica.applyDelta(changes[0])
  assert.equal(Object.keys(replica.value() as object).length, 6)
  assert.equal(replica.applyDelta(sender.deltaSince(replica.version())!), true)
  assert.deepEqual(replica.value(), A.toJS(source))
})
