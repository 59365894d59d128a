/**
 * Real editing traces through the document replicas: every sequential trace
 * through a Yjs replica (a second replica receives every change event
 * through the guarded applyDelta) and the concurrent friendsforever trace
 * (one replica per agent, merges by delta). Automerge applies changes about
 * 50x slower, so here it replays prefixes (sveltecomponent's first 5000
 * transactions against a plain string replay, friendsforever's first 8000
 * transactions to convergence); automerge-traces-full.test.ts (long list)
 * replays both whole traces against endContent.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import { replayAutomergeConcurrent, replayAutomergeSequential, replayText } from './automerge-trace-replay.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { SEQUENTIAL_TRACES, hasAstral, loadTrace, replayConcurrent, utf16Position, utf16Span, type ConcurrentTrace, type Patch } from './traces.ts'

/** Applies one patch to a Y.Text, converting code points to UTF-16 units. */
function yjsPatch(replica: YjsReplica, [pos, del, ins]: Patch, astral: { on: boolean }): void {
  const text = replica.doc.getText('text')
  const current = astral.on ? text.toString() : ''
  const at = utf16Position(current, pos, astral.on)
  if (del > 0) text.delete(at, utf16Span(current, at, del, astral.on))
  if (ins.length > 0) {
    if (hasAstral(ins)) astral.on = true
    text.insert(at, ins)
  }
}

for (const name of SEQUENTIAL_TRACES) {
  test(`yjs replays ${name}: sender and guarded receiver end at endContent`, () => {
    const trace = loadTrace(name)
    const sender = new YjsReplica({ agentId: agentId('sender'), types: { text: 'text' } })
    const receiver = new YjsReplica({ agentId: agentId('receiver') })
    let events = 0
    sender.events.on('change', ({ delta, local }) => {
      assert.equal(local, true)
      events++
      assert.equal(receiver.applyDelta(delta, 'sender'), true)
    })
    const astral = { on: false }
    for (const txn of trace.txns)
      sender.doc.transact(() => {
        for (const patch of txn.patches) yjsPatch(sender, patch, astral)
      })
    assert.equal(sender.doc.getText('text').toString(), trace.endContent)
    assert.deepEqual(receiver.value(), { text: trace.endContent })
    assert.ok(events > 0 && events <= trace.txns.length)
    // A third replica catches up from a snapshot, and nothing is missing after it.
    const late = new YjsReplica({ agentId: agentId('late'), snapshot: receiver.snapshot() })
    assert.deepEqual(late.value(), { text: trace.endContent })
    const rest = sender.deltaSince(late.version())
    if (rest !== null) assert.equal(late.applyDelta(rest), false)
  })
}

test('yjs replays friendsforever: one replica per agent, every replica ends at endContent', () => {
  const trace = loadTrace<ConcurrentTrace>('friendsforever.concurrent')
  // Concurrent inserts at one place are ordered by client id; the trace's
  // endContent orders agent 0 first.
  const replicas = Array.from(
    { length: trace.numAgents },
    (_, i) => new YjsReplica({ agentId: agentId(`agent-${i}`), types: { text: 'text' }, clientId: i + 1 }),
  )
  const deltas: Uint8Array[] = []
  const astral = replicas.map(() => ({ on: false }))
  replayConcurrent(
    trace,
    (agent, txns) => {
      for (const txn of txns) replicas[agent].applyDelta(deltas[txn])
    },
    (agent, txn) => {
      const replica = replicas[agent]
      const before = replica.version()
      replica.doc.transact(() => {
        for (const patch of trace.txns[txn].patches) yjsPatch(replica, patch, astral[agent])
      })
      deltas[txn] = replica.deltaSince(before)!
    },
  )
  for (const a of replicas)
    for (const b of replicas)
      if (a !== b) {
        const delta = a.deltaSince(b.version())
        if (delta) b.applyDelta(delta)
      }
  for (const replica of replicas) assert.equal(replica.doc.getText('text').toString(), trace.endContent)
})

test('automerge replays the first 5000 transactions of sveltecomponent: sender and guarded receiver match a string replay', () => {
  const trace = loadTrace('sveltecomponent')
  const txns = trace.txns.slice(0, 5000)
  const { sender, receiver } = replayAutomergeSequential(txns)
  const expected = replayText(txns)
  assert.equal(sender.doc.text, expected)
  assert.deepEqual(receiver.value(), { text: expected })
})

test('automerge replays the first 8000 transactions of friendsforever: every replica converges', () => {
  const trace = loadTrace<ConcurrentTrace>('friendsforever.concurrent')
  const replicas = replayAutomergeConcurrent({ ...trace, txns: trace.txns.slice(0, 8000) })
  const texts = new Set(replicas.map((replica) => replica.doc.text))
  assert.equal(texts.size, 1)
  assert.ok([...texts][0].length > 0)
})
