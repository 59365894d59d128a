/**
 * Limits on the decoded size of one document delta (operations, content
 * bytes), read from the bytes before Yjs or Automerge runs: over a limit the
 * delta is refused with CONCORD_LIMIT_EXCEEDED and nothing is applied.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { splitAutomergeChunks } from '../../../crdt/documents/automerge-guard.ts'
import { checkAutomergeSize } from '../../../crdt/documents/automerge-size.ts'
import { checkDocumentDelta } from '../../../crdt/documents/delta-size.ts'
import { DEFAULT_DOCUMENT_LIMITS, stricterLimits } from '../../../crdt/documents/options.ts'
import { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import { validateYjsUpdate } from '../../../crdt/documents/yjs-guard.ts'
import { ErrorCodes, isConcordError } from '../../../crdt/errors.ts'
import { agentId } from '../../../crdt/agent-id.ts'

const unbounded = { maxOperations: Infinity, maxInsertedBytes: Infinity, maxInflatedBytes: Infinity }
const limitExceeded = (error: unknown) => isConcordError(error, ErrorCodes.LIMIT_EXCEEDED)

function automergeSize(bytes: Uint8Array) {
  return checkAutomergeSize(splitAutomergeChunks(bytes, DEFAULT_DOCUMENT_LIMITS), unbounded, 'test')
}

test("automerge: the op count read from a change chunk's columns is the one Automerge decodes", () => {
  let doc = A.from<{ text: string; list: unknown[]; m: Record<string, unknown> }>({ text: '', list: [], m: {} })
  const changes: Uint8Array[] = []
  for (let i = 0; i < 30; i++) {
    doc = A.change(doc, (d) => {
      A.splice(d, ['text'], i % 3, i % 2, `ab😀${i}`)
      d.list.push(i, null, { k: `v${i}` }, [i])
      if (i % 4 === 0) d.list.splice(0, 2)
      d.m[`k${i % 5}`] = i % 2 === 0 ? new A.Counter(i) : 'x'.repeat(i)
      if (i % 3 === 0) delete d.m.k0
    })
    changes.push(A.getLastLocalChange(doc)!)
  }
  for (const change of changes) {
    const decoded = A.decodeChange(change)
    const size = automergeSize(change)
    assert.equal(size.operations, decoded.ops.length)
    assert.ok(size.insertedBytes >= 0)
  }
  // A whole document: op rows and change rows, deflated columns inflated.
  const saved = A.save(doc)
  const size = automergeSize(saved)
  const ops = changes.reduce((n, change) => n + A.decodeChange(change).ops.length, 0)
  // (A document stores deletions as successors, not as op rows.)
  assert.ok(size.operations > 0.9 * ops, `${size.operations} counted, ${ops} ops in the changes`)
  assert.ok(size.inflatedBytes > 0, 'a saved document has deflated columns')
})

test('automerge: a change of a few hundred bytes holding 100,000 inserts is refused over maxOperations before Automerge runs, nothing applied', () => {
  const base = A.from<{ l: null[] }>({ l: [] })
  const baseBytes = A.save(base)
  const flood = A.change(base, (d) => {
    for (let i = 0; i < 10; i++) A.insertAt(d.l, 0, ...new Array<null>(10_000).fill(null))
  })
  const change = A.getLastLocalChange(flood)!
  assert.ok(change.length < 400, `${change.length} bytes`)
  const replica = new AutomergeReplica({
    agentId: agentId('r'),
    snapshot: new AutomergeReplica({ agentId: agentId('s') }).snapshot(),
    limits: { maxOperations: 50_000 },
  })
  replica.applyDelta(baseBytes)
  const before = replica.version()
  assert.throws(() => replica.applyDelta(change), limitExceeded)
  assert.deepEqual(replica.version(), before)
  assert.deepEqual(replica.value(), { l: [] })
  // Under the default (1,000,000) the same change applies.
  const open = new AutomergeReplica({ agentId: agentId('o') })
  open.applyDelta(baseBytes)
  assert.equal(open.applyDelta(change), true)
  assert.equal((open.doc as { l: null[] }).l.length, 100_000)
  // The store-level check says the same without a replica.
  assert.throws(() => checkDocumentDelta('automerge', change, { maxOperations: 50_000 }), limitExceeded)
  checkDocumentDelta('automerge', change)
})

test('automerge: a document chunk whose deflated columns inflate past the limits is refused', () => {
  const big = A.change(A.from<{ text: string }>({ text: '' }), (d) => {
    A.splice(d, ['text'], 0, 0, 'x'.repeat(200_000))
  })
  const saved = A.save(big)
  assert.ok(saved.length < 20_000, `saved in ${saved.length} bytes`)
  const size = automergeSize(saved)
  assert.ok(size.operations > 200_000 && size.insertedBytes >= 200_000)
  const fresh = () => new AutomergeReplica({ agentId: agentId('f'), limits: { maxInsertedBytes: 100_000 } })
  assert.throws(() => fresh().applyDelta(saved), limitExceeded)
  assert.throws(() => new AutomergeReplica({ agentId: agentId('g'), limits: { maxOperations: 100_000 } }).applyDelta(saved), limitExceeded)
  // maxBytes also bounds what the columns inflate to.
  assert.throws(() => new AutomergeReplica({ agentId: agentId('h'), limits: { maxBytes: 50_000 } }).applyDelta(saved), limitExceeded)
  const replica = fresh()
  try {
    replica.applyDelta(saved)
  } catch {
    /* refused */
  }
  assert.deepEqual(replica.value(), {})
})

test('automerge: chunks that break the column grammar are DecodeErrors, not counted', () => {
  const doc = A.change(A.from<{ n: number }>({ n: 1 }), (d) => {
    d.n = 2
  })
  const change = A.getLastLocalChange(doc)!
  const chunk = splitAutomergeChunks(change, DEFAULT_DOCUMENT_LIMITS)[0]
  // Cut the payload short and fix the framing: the columns no longer fit.
  const payload = change.subarray(chunk.payloadOffset, change.length - 3)
  assert.throws(
    () =>
      checkAutomergeSize([{ ...chunk, bytes: new Uint8Array([...change.subarray(0, chunk.payloadOffset - 1), payload.length, ...payload]) }], unbounded, 'cut'),
    (e) => isConcordError(e, ErrorCodes.DECODE_ERROR),
  )
})

test('yjs: structs and delete ranges over maxOperations, content over maxInsertedBytes, are refused with nothing applied', () => {
  const source = new Y.Doc()
  const array = source.getArray('a')
  source.transact(() => {
    for (let i = 0; i < 2000; i++) array.insert(i % 2 === 0 ? 0 : array.length, [i])
  })
  const update = Y.encodeStateAsUpdate(source)
  const summary = validateYjsUpdate(update, DEFAULT_DOCUMENT_LIMITS)
  assert.ok(summary.structs > 1000, `${summary.structs} structs`)
  const small = new YjsReplica({ agentId: agentId('y'), limits: { maxOperations: 1000 } })
  assert.throws(() => small.applyDelta(update), limitExceeded)
  assert.deepEqual(small.value(), {})
  assert.equal(new YjsReplica({ agentId: agentId('z') }).applyDelta(update), true)

  const text = new Y.Doc()
  text.getText('t').insert(0, 'y'.repeat(10_000))
  const long = Y.encodeStateAsUpdate(text)
  const inserted = validateYjsUpdate(long, DEFAULT_DOCUMENT_LIMITS).insertedBytes
  assert.ok(inserted >= 10_000 && inserted < 10_010, `${inserted} bytes of content`)
  const narrow = new YjsReplica({ agentId: agentId('n'), limits: { maxInsertedBytes: 5000 } })
  assert.throws(() => narrow.applyDelta(long), limitExceeded)
  assert.deepEqual(narrow.value(), {})
  assert.throws(() => checkDocumentDelta('yjs', long, { maxInsertedBytes: 5000 }), limitExceeded)
})

test('snapshots are not bounded by the delta limits (a document may outgrow one delta)', () => {
  const source = new AutomergeReplica<{ l: number[] }>({ agentId: agentId('s'), initial: { l: [] } })
  for (let i = 0; i < 5; i++)
    source.change((d) => {
      for (let j = 0; j < 300; j++) d.l.push(j)
    })
  const loaded = new AutomergeReplica<{ l: number[] }>({ agentId: agentId('l'), snapshot: source.snapshot(), limits: { maxOperations: 1000 } })
  assert.equal(loaded.doc.l.length, 1500)
})

test('stricterLimits: the stricter bound of each, computed once for frozen limits (the result frozen), anew for others', () => {
  const own = Object.freeze({ ...DEFAULT_DOCUMENT_LIMITS, maxBytes: 1000, maxNesting: 8 })
  const extra = Object.freeze({ maxBytes: 500, maxNesting: 16 })
  const merged = stricterLimits(own, extra)
  assert.equal(merged.maxBytes, 500)
  assert.equal(merged.maxNesting, 8)
  assert.equal(merged.maxOperations, own.maxOperations)
  assert.ok(Object.isFrozen(merged))
  assert.equal(stricterLimits(own, extra), merged, 'the same frozen pair gives the same object')
  const loose = { maxBytes: 400 }
  const fresh = stricterLimits(own, loose)
  assert.equal(fresh.maxBytes, 400)
  loose.maxBytes = 300
  assert.equal(stricterLimits(own, loose).maxBytes, 300, 'limits that may change are read again')
  assert.equal(stricterLimits(own, undefined), own)
})
