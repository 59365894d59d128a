/**
 * Document replicas against the bare libraries, in the same run.
 *
 * - Yjs, the crdt-benchmarks "B4" workload: the automerge-paper trace
 *   (259,778 single-character edits, each its own transaction). Sender: a
 *   Concord YjsReplica (its change events collected, as persistence and sync
 *   would take them) vs a bare Y.Doc with an 'update' listener collecting
 *   the updates. Receiver: every one of those updates through
 *   `applyDelta` (guard + apply + change event) vs bare `Y.applyUpdate`.
 *   Also update bytes, document size (snapshot vs bare encodeStateAsUpdate)
 *   and heap after the run.
 * - Automerge on sveltecomponent (18,335 transactions): sender
 *   `AutomergeReplica.change` vs bare `Automerge.change` +
 *   `getLastLocalChange`; receiver in batches of 100 changes (Automerge
 *   applies one remote change in time linear in the document, so one by one
 *   the run takes minutes) via `applyDelta` of the concatenated changes
 *   (framing, checksums, atomic applyChanges) vs bare `applyChanges`.
 * Each timing is the best of two (Yjs receiver: five) alternating rounds.
 */
import v8 from 'node:v8'
import vm from 'node:vm'
import * as Y from 'yjs'
import * as A from '@automerge/automerge'
import { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import { AutomergeReplica } from '../crdt/documents/automerge-replica.ts'
import { validateYjsUpdate } from '../crdt/documents/yjs-guard.ts'
import { DEFAULT_DOCUMENT_LIMITS } from '../crdt/documents/options.ts'
import { agentId } from '../crdt/agent-id.ts'
import { concatBytes, loadTrace } from '../test/crdt/documents/traces.ts'
import type { Benchmark, Measurement } from './harness.ts'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') as () => void

function now(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

function heapMiB(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed / (1024 * 1024)
}

function sum(parts: readonly Uint8Array[]): number {
  return parts.reduce((n, part) => n + part.length, 0)
}

type Edit = [number, number, string]

/** One client id for both senders: its varuint length shows in every update's size. */
const CLIENT_ID = 0x7a5b3c2d

/** The automerge-paper edits (single characters, each its own transaction). */
function paperEdits(): Edit[] {
  const trace = loadTrace('automerge-paper')
  return trace.txns.map((txn) => txn.patches[0] as Edit)
}

function bareYjsSender(edits: Edit[]) {
  const heapBefore = heapMiB()
  const start = now()
  const doc = new Y.Doc()
  doc.clientID = CLIENT_ID
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const text = doc.getText('text')
  for (const [pos, del, ins] of edits) {
    if (del > 0) text.delete(pos, del)
    if (ins) text.insert(pos, ins)
  }
  const ms = now() - start
  const size = Y.encodeStateAsUpdate(doc).length
  const heap = heapMiB() - heapBefore
  return { ms, updates, size, heap, text: text.toString() }
}

function concordYjsSender(edits: Edit[]) {
  const heapBefore = heapMiB()
  const start = now()
  const replica = new YjsReplica({ agentId: agentId('bench'), types: { text: 'text' }, clientId: CLIENT_ID })
  const updates: Uint8Array[] = []
  replica.events.on('change', ({ delta }) => {
    updates.push(delta)
  })
  const text = replica.doc.getText('text')
  for (const [pos, del, ins] of edits) {
    if (del > 0) text.delete(pos, del)
    if (ins) text.insert(pos, ins)
  }
  const ms = now() - start
  const size = replica.snapshot().length
  const heap = heapMiB() - heapBefore
  return { ms, updates, size, heap, text: text.toString() }
}

function bareYjsReceiver(updates: Uint8Array[]) {
  const start = now()
  const doc = new Y.Doc()
  for (const update of updates) Y.applyUpdate(doc, update)
  return { ms: now() - start, text: doc.getText('text').toString() }
}

function concordYjsReceiver(updates: Uint8Array[]) {
  const start = now()
  const replica = new YjsReplica({ agentId: agentId('receiver') })
  let events = 0
  replica.events.on('change', () => {
    events++
  })
  for (const update of updates) replica.applyDelta(update)
  return { ms: now() - start, text: replica.doc.getText('text').toString(), events }
}

function guardOnly(updates: Uint8Array[]): number {
  const start = now()
  for (const update of updates) validateYjsUpdate(update, DEFAULT_DOCUMENT_LIMITS)
  return now() - start
}

const yjsB4: Benchmark = {
  name: 'documents/yjs-b4-automerge-paper',
  async run(): Promise<Measurement[]> {
    const edits = paperEdits()
    const expected = loadTrace('automerge-paper').endContent
    let bare = bareYjsSender(edits)
    let mine = concordYjsSender(edits)
    const bare2 = bareYjsSender(edits)
    const mine2 = concordYjsSender(edits)
    const bareMs = Math.min(bare.ms, bare2.ms)
    const mineMs = Math.min(mine.ms, mine2.ms)
    bare = bare2.heap < bare.heap ? bare2 : bare
    mine = mine2.heap < mine.heap ? mine2 : mine
    if (bare.text !== expected || mine.text !== expected) throw new Error('B4: the text does not match endContent')
    const updates = mine.updates
    const recvBare: Array<ReturnType<typeof bareYjsReceiver>> = []
    const recvMine: Array<ReturnType<typeof concordYjsReceiver>> = []
    for (let round = 0; round < 5; round++) {
      recvBare.push(bareYjsReceiver(updates))
      recvMine.push(concordYjsReceiver(updates))
    }
    if (recvMine[0].text !== expected || recvBare[0].text !== expected) throw new Error('B4 receiver: the text does not match endContent')
    const guardMs = Math.min(guardOnly(updates), guardOnly(updates))
    const recvBareMs = Math.min(...recvBare.map((r) => r.ms))
    const recvMineMs = Math.min(...recvMine.map((r) => r.ms))
    return [
      {
        name: `sender: ${edits.length} edits, one transaction each`,
        value: mineMs,
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'bare Yjs + update listener', value: bareMs },
        target: '<= 1.2',
      },
      {
        name: 'receiver: applyDelta of every update (guarded)',
        value: recvMineMs,
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'bare Y.applyUpdate', value: recvBareMs },
        target: '<= 1.2',
        note: `guard alone: ${guardMs.toFixed(0)} ms for ${updates.length} updates (${((guardMs / recvBareMs) * 100).toFixed(1)}% of bare apply); ${recvMine[0].events} change events`,
      },
      {
        name: 'update bytes (sum of change events)',
        value: sum(mine.updates),
        unit: 'bytes',
        better: 'lower',
        baseline: { label: 'bare Yjs updates', value: sum(bare.updates) },
        target: '<= 1.0',
      },
      {
        name: 'document size (snapshot)',
        value: mine.size,
        unit: 'bytes',
        better: 'lower',
        baseline: { label: 'bare encodeStateAsUpdate', value: bare.size },
        target: '<= 1.01',
      },
      {
        name: 'heap after the run (incl. collected updates)',
        value: mine.heap,
        unit: 'MiB',
        better: 'lower',
        baseline: { label: 'bare Yjs', value: bare.heap },
        target: '<= 1.2',
      },
    ]
  },
}

type Txn = { patches: Edit[] }

function bareAutomergeSender(txns: Txn[]) {
  const start = now()
  let doc = A.init<{ text: string }>()
  doc = A.change(doc, (d) => {
    d.text = ''
  })
  const changes: Uint8Array[] = []
  for (const txn of txns) {
    doc = A.change(doc, (d) => {
      for (const [pos, del, ins] of txn.patches) A.splice(d, ['text'], pos, del, ins)
    })
    changes.push(A.getLastLocalChange(doc)!)
  }
  return { ms: now() - start, changes, size: A.save(doc).length, text: doc.text }
}

function concordAutomergeSender(txns: Txn[]) {
  const start = now()
  const replica = new AutomergeReplica<{ text: string }>({ agentId: agentId('bench'), initial: { text: '' } })
  const changes: Uint8Array[] = []
  replica.events.on('change', ({ delta }) => {
    changes.push(delta)
  })
  for (const txn of txns) {
    replica.change((d) => {
      for (const [pos, del, ins] of txn.patches) A.splice(d, ['text'], pos, del, ins)
    })
  }
  return { ms: now() - start, changes, size: replica.snapshot().length, text: replica.doc.text }
}

const BATCH = 100

function bareAutomergeReceiver(changes: Uint8Array[]) {
  const start = now()
  let doc = A.change(A.init<{ text: string }>({ actor: '00' }), { time: 0 }, (d) => {
    d.text = ''
  })
  for (let i = 0; i < changes.length; i += BATCH) [doc] = A.applyChanges(doc, changes.slice(i, i + BATCH))
  return { ms: now() - start, text: doc.text }
}

function concordAutomergeReceiver(changes: Uint8Array[]) {
  const batches: Uint8Array[] = []
  for (let i = 0; i < changes.length; i += BATCH) batches.push(concatBytes(changes.slice(i, i + BATCH)))
  const start = now()
  const replica = new AutomergeReplica<{ text: string }>({ agentId: agentId('receiver'), initial: { text: '' } })
  for (const batch of batches) replica.applyDelta(batch)
  return { ms: now() - start, text: replica.doc.text }
}

const automergeSvelte: Benchmark = {
  name: 'documents/automerge-sveltecomponent',
  async run(): Promise<Measurement[]> {
    const trace = loadTrace('sveltecomponent')
    const txns = trace.txns as Txn[]
    const bare = [bareAutomergeSender(txns)]
    const mine = [concordAutomergeSender(txns)]
    bare.push(bareAutomergeSender(txns))
    mine.push(concordAutomergeSender(txns))
    if (bare[0].text !== trace.endContent || mine[0].text !== trace.endContent) throw new Error('sveltecomponent: the text does not match endContent')
    const changes = mine[0].changes
    const recvBare = [bareAutomergeReceiver(changes)]
    const recvMine = [concordAutomergeReceiver(changes)]
    recvBare.push(bareAutomergeReceiver(changes))
    recvMine.push(concordAutomergeReceiver(changes))
    if (recvMine[0].text !== trace.endContent || recvBare[0].text !== trace.endContent)
      throw new Error('sveltecomponent receiver: the text does not match endContent')
    return [
      {
        name: `sender: ${txns.length} changes`,
        value: Math.min(...mine.map((r) => r.ms)),
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'bare Automerge.change', value: Math.min(...bare.map((r) => r.ms)) },
        target: '<= 1.2',
      },
      {
        name: `receiver: applyDelta of batches of ${BATCH} changes (guarded)`,
        value: Math.min(...recvMine.map((r) => r.ms)),
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'bare applyChanges', value: Math.min(...recvBare.map((r) => r.ms)) },
        target: '<= 1.2',
      },
      {
        name: 'update bytes (sum of change events)',
        value: sum(mine[0].changes),
        unit: 'bytes',
        better: 'lower',
        baseline: { label: 'bare changes', value: sum(bare[0].changes) },
        target: '<= 1.05',
        note: 'the shared initial change (fixed actor) puts a second actor in every change',
      },
      {
        name: 'document size (snapshot)',
        value: mine[0].size,
        unit: 'bytes',
        better: 'lower',
        baseline: { label: 'bare save()', value: bare[0].size },
        target: '<= 1.01',
      },
    ]
  },
}

/** The document benchmarks. */
export const benchmarks: Benchmark[] = [yjsB4, automergeSvelte]
