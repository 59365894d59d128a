/**
 * Long variant (run with the chaos list): the whole sveltecomponent and
 * friendsforever traces through Automerge replicas, against endContent.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { loadTrace, type ConcurrentTrace } from './traces.ts'
import { replayAutomergeConcurrent, replayAutomergeSequential } from './automerge-trace-replay.ts'

test('automerge replays sveltecomponent: sender and guarded receiver end at endContent', () => {
  const trace = loadTrace('sveltecomponent')
  const { sender, receiver } = replayAutomergeSequential(trace.txns)
  assert.equal(sender.doc.text, trace.endContent)
  assert.deepEqual(receiver.value(), { text: trace.endContent })
  const late = new AutomergeReplica<{ text: string }>({ agentId: agentId('late'), snapshot: sender.snapshot() })
  assert.deepEqual(late.value(), { text: trace.endContent })
  assert.equal(sender.deltaSince(late.version()), null)
})

test('automerge replays friendsforever: one replica per agent, every replica ends at endContent', () => {
  const trace = loadTrace<ConcurrentTrace>('friendsforever.concurrent')
  for (const replica of replayAutomergeConcurrent(trace)) assert.equal(replica.doc.text, trace.endContent)
})
