/**
 * Replays editing traces through Automerge replicas (shared by the default
 * and the long trace tests).
 */
import assert from 'node:assert/strict'
import * as A from '@automerge/automerge'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { localDelta } from '../../helpers/local-delta.ts'
import { concatBytes, hasAstral, replayConcurrent, utf16Position, utf16Span, type ConcurrentTrace, type Patch } from './traces.ts'

/** The text after applying the patches of `txns` to an empty string. */
export function replayText(txns: ReadonlyArray<{ readonly patches: readonly Patch[] }>): string {
  let text = ''
  for (const txn of txns) {
    for (const [pos, del, ins] of txn.patches) {
      const astral = hasAstral(text)
      const at = utf16Position(text, pos, astral)
      text = text.slice(0, at) + ins + text.slice(at + utf16Span(text, at, del, astral))
    }
  }
  return text
}

/** Applies a transaction's patches to the Automerge text in one change; its delta, or null when it changed nothing. */
export function automergeChange(replica: AutomergeReplica<{ text: string }>, patches: readonly Patch[]): Uint8Array | null {
  return localDelta(replica, () =>
    replica.change((doc) => {
      for (const [pos, del, ins] of patches) {
        const current = doc.text
        const astral = hasAstral(current) || hasAstral(ins)
        const at = utf16Position(current, pos, astral)
        A.splice(doc, ['text'], at, utf16Span(current, at, del, astral), ins)
      }
    }),
  )
}

/**
 * A sender replica types every transaction; a receiver applies its change
 * events through the guarded applyDelta: the first 1000 one by one, then in
 * batches of 1000 (one concatenated delta each, as a sync round sends them:
 * Automerge applies a remote change in time linear in the document).
 */
export function replayAutomergeSequential(txns: ReadonlyArray<{ readonly patches: readonly Patch[] }>): {
  sender: AutomergeReplica<{ text: string }>
  receiver: AutomergeReplica<{ text: string }>
} {
  const sender = new AutomergeReplica<{ text: string }>({ agentId: agentId('sender'), initial: { text: '' } })
  const receiver = new AutomergeReplica<{ text: string }>({ agentId: agentId('receiver'), initial: { text: '' } })
  let batch: Uint8Array[] = []
  let sent = 0
  sender.events.on('change', ({ delta, local }) => {
    assert.equal(local, true)
    batch.push(delta)
    if (++sent > 1000 && batch.length < 1000) return
    assert.equal(receiver.applyDelta(concatBytes(batch)), true)
    batch = []
  })
  for (const txn of txns) automergeChange(sender, txn.patches)
  if (batch.length > 0) assert.equal(receiver.applyDelta(concatBytes(batch)), true)
  return { sender, receiver }
}

/**
 * One replica per agent (actor ids ordered by agent, as `actorOrder` says:
 * concurrent inserts at one place are ordered by actor); merges are one
 * concatenated delta per edit; ends with a full exchange.
 */
export function replayAutomergeConcurrent(
  trace: ConcurrentTrace,
  actorOrder: 'ascending' | 'descending' = 'ascending',
): Array<AutomergeReplica<{ text: string }>> {
  const replicas = Array.from(
    { length: trace.numAgents },
    (_, i) =>
      new AutomergeReplica<{ text: string }>({
        agentId: agentId(`agent-${i}`),
        initial: { text: '' },
        actor: actorOrder === 'ascending' ? `a${i}` : `a${9 - i}`,
      }),
  )
  const deltas: Uint8Array[] = []
  replayConcurrent(
    trace,
    (agent, txns) => {
      replicas[agent].applyDelta(concatBytes(txns.map((txn) => deltas[txn]).filter(Boolean)))
    },
    (agent, txn) => {
      deltas[txn] = automergeChange(replicas[agent], trace.txns[txn].patches)!
    },
  )
  for (const a of replicas)
    for (const b of replicas)
      if (a !== b) {
        const delta = a.deltaSince(b.version())
        if (delta) b.applyDelta(delta)
      }
  return replicas
}
