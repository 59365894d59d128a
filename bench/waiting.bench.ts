/**
 * Updates that wait for a missing dependency (issue 11: 600 Yjs updates of
 * 50 KB that each wait cost ~30 s of CPU, growing with the square of what
 * waits: Yjs merges every new update into its whole pending set and retries
 * it). Each figure is the flood order (every update but the first, then
 * the first) beside the same updates applied in order, as a ratio: bare Yjs
 * / Automerge (what Concord did before: it let the library hold them) and
 * Concord's replicas (held outside the library, released once). Budgets are
 * raised so that nothing is dropped: this measures holding and releasing.
 */
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import { AutomergeReplica } from '../crdt/documents/automerge-replica.ts'
import { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import { agentId } from '../crdt/agent-id.ts'
import type { Benchmark, Measurement } from './harness.ts'

const now = () => performance.now()
const LIMITS = { maxWaitingUpdates: 10_000, maxWaitingBytes: 256 * 1024 * 1024 }

/** `count` Yjs updates of about `bytes` bytes each, one client appending to one text: each depends on the one before. */
function yjsUpdates(count: number, bytes: number): { updates: Uint8Array[]; text: string } {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const text = doc.getText('t')
  for (let i = 0; i < count; i++) text.insert(text.length, `${i}:${'y'.repeat(bytes - 8)}\n`)
  return { updates, text: text.toString() }
}

function bareYjs(order: Uint8Array[]): { ms: number; text: string } {
  const doc = new Y.Doc()
  const start = now()
  for (const update of order) Y.applyUpdate(doc, update)
  return { ms: now() - start, text: doc.getText('t').toString() }
}

function concordYjs(order: Uint8Array[]): { ms: number; text: string } {
  const replica = new YjsReplica({ agentId: agentId('r'), limits: LIMITS })
  const start = now()
  for (const update of order) replica.applyDelta(update)
  return { ms: now() - start, text: replica.doc.getText('t').toString() }
}

function automergeChanges(count: number, bytes: number): { base: Uint8Array; changes: Uint8Array[]; text: string } {
  let doc = A.change(A.init<{ text: string }>({ actor: '00' }), { time: 0 }, (d) => {
    d.text = ''
  })
  const base = A.save(doc)
  const changes: Uint8Array[] = []
  for (let i = 0; i < count; i++) {
    doc = A.change(doc, (d) => {
      A.splice(d, ['text'], d.text.length, 0, `${i}:${'a'.repeat(bytes - 8)}\n`)
    })
    changes.push(A.getLastLocalChange(doc)!)
  }
  return { base, changes, text: doc.text }
}

function bareAutomerge(base: Uint8Array, order: Uint8Array[]): { ms: number; text: string } {
  let doc = A.load<{ text: string }>(base)
  const start = now()
  for (const change of order) [doc] = A.applyChanges(doc, [change])
  return { ms: now() - start, text: doc.text }
}

function concordAutomerge(base: Uint8Array, order: Uint8Array[]): { ms: number; text: string } {
  const replica = new AutomergeReplica<{ text: string }>({ agentId: agentId('r'), limits: LIMITS })
  replica.applyDelta(base)
  const start = now()
  for (const change of order) replica.applyDelta(change)
  return { ms: now() - start, text: replica.doc.text }
}

const flood = <T>(items: readonly T[]): T[] => [...items.slice(1), items[0]]

const waitingFlood: Benchmark = {
  name: 'documents/waiting-flood',
  async run(): Promise<Measurement[]> {
    const yjs = yjsUpdates(600, 50 * 1024)
    const yjsInOrder = bareYjs(yjs.updates)
    const yjsFlood = bareYjs(flood(yjs.updates))
    const mineInOrder = [concordYjs(yjs.updates), concordYjs(yjs.updates)]
    const mineFlood = [concordYjs(flood(yjs.updates)), concordYjs(flood(yjs.updates))]
    for (const result of [yjsInOrder, yjsFlood, ...mineInOrder, ...mineFlood])
      if (result.text !== yjs.text) throw new Error('waiting-flood: a Yjs replay does not match')
    const am = automergeChanges(100, 2 * 1024)
    const amInOrder = bareAutomerge(am.base, am.changes)
    const amFlood = bareAutomerge(am.base, flood(am.changes))
    const amMineInOrder = concordAutomerge(am.base, am.changes)
    const amMineFlood = concordAutomerge(am.base, flood(am.changes))
    for (const result of [amInOrder, amFlood, amMineInOrder, amMineFlood])
      if (result.text !== am.text) throw new Error('waiting-flood: an Automerge replay does not match')
    const min = (results: Array<{ ms: number }>) => Math.min(...results.map((r) => r.ms))
    return [
      {
        name: 'yjs, 600 x 50 KB waiting for the first: bare Y.applyUpdate (before)',
        value: yjsFlood.ms,
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'the same in order', value: yjsInOrder.ms },
      },
      {
        name: 'yjs, the same flood: Concord applyDelta (after)',
        value: min(mineFlood),
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'the same in order', value: min(mineInOrder) },
        target: '<= 4',
        note: 'linear: each update is walked by the guard, copied while it waits, applied once, and merged once into the change event',
      },
      {
        name: 'automerge, 100 x 2 KB changes waiting for the first: bare applyChanges (before)',
        value: amFlood.ms,
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'the same in order', value: amInOrder.ms },
        note: "Automerge's own queue is not quadratic; one change per call is (each call is linear in the document)",
      },
      {
        name: 'automerge, the same flood: Concord applyDelta (after)',
        value: amMineFlood.ms,
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'the same in order', value: amMineInOrder.ms },
        target: '<= 2',
      },
    ]
  },
}

/** The waiting-update benchmarks. */
export const benchmarks: Benchmark[] = [waitingFlood]
