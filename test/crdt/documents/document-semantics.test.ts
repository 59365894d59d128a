/**
 * Behaviour of the document replicas beyond the shared laws: change events
 * (local/remote, origins), duplicates and out-of-order (pending) deltas,
 * deltaSince with unknown versions, snapshots (gc flag), value() of
 * undeclared top-level types, restore(), and the registry entries.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as Y from 'yjs'
import * as A from '@automerge/automerge'
import { YjsReplica, isYjsRemoteOrigin } from '../../../crdt/documents/yjs-replica.ts'
import { AutomergeReplica, decodeAutomergeHeads, decodeAutomergeVersion, encodeAutomergeVersion } from '../../../crdt/documents/automerge-replica.ts'
import { AutomergeChunkType, splitAutomergeChunks } from '../../../crdt/documents/automerge-guard.ts'
import { DEFAULT_DOCUMENT_LIMITS } from '../../../crdt/documents/options.ts'
import { createReplica } from '../../../crdt/registry.ts'
import { ErrorCodes, isConcordError } from '../../../crdt/errors.ts'
import type { ChangeEvent } from '../../../crdt/replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'

const id = agentId

/** A Yjs replica with every kind of top-level type, and its change events. */
function richYjs() {
  const replica = new YjsReplica({ agentId: id('a') })
  const events: ChangeEvent[] = []
  replica.events.on('change', (event) => events.push(event))
  const { doc } = replica
  const text = doc.getText('text')
  text.insert(0, 'hello 😀 world')
  text.format(0, 5, { bold: true })
  doc.getMap('map').set('k', { deep: [1, 2, { x: null }] })
  doc.getMap('map').set('n', -12345)
  doc.getArray('list').push([1, 'two', new Y.Map()])
  ;(doc.getArray('list').get(2) as Y.Map<unknown>).set('z', 1)
  const p = new Y.XmlElement('p')
  p.setAttribute('class', 'c')
  p.insert(0, [new Y.XmlText('hi')])
  doc.getXmlFragment('xml').insert(0, [p])
  text.delete(1, 2)
  doc.getMap('map').delete('n')
  return { replica, events }
}

test('yjs: local transactions emit their update; remote deltas emit local:false with the caller origin', () => {
  const { replica, events } = richYjs()
  assert.equal(events.length, 9, 'one event per transaction (XML nodes built before insertion are not transactions)')
  assert.ok(events.every((event) => event.local))
  const other = new YjsReplica({ agentId: id('b') })
  const remote: ChangeEvent[] = []
  other.events.on('change', (event) => remote.push(event))
  const seenOrigins: unknown[] = []
  other.doc.on('update', (_update: Uint8Array, origin: unknown) => seenOrigins.push(origin))
  for (const event of events) assert.equal(other.applyDelta(event.delta, 'peer-1'), true)
  assert.equal(remote.length, events.length)
  assert.ok(remote.every((event) => !event.local && event.origin === 'peer-1'))
  assert.ok(
    seenOrigins.every((origin) => isYjsRemoteOrigin(origin) && origin.origin === 'peer-1'),
    'doc listeners can tell remote from local',
  )
  assert.deepEqual(other.value(), replica.value())
  // Duplicates change nothing and emit nothing.
  for (const event of events) assert.equal(other.applyDelta(event.delta), false)
  assert.equal(remote.length, events.length)
})

test('yjs: remote deltas are emitted as received, whether or not the doc has other update observers; observer-made local changes are emitted', () => {
  const { events } = richYjs()
  const other = new YjsReplica({ agentId: id('b') })
  const remote: ChangeEvent[] = []
  other.events.on('change', (event) => remote.push(event))
  // Only the replica observes 'update': the delta itself is the event (Yjs does not re-encode it).
  assert.equal(other.applyDelta(events[0].delta, 'p'), true)
  assert.equal(remote.at(-1)!.delta, events[0].delta)
  // A provider bound to the doc still sees remote updates, with their origin.
  const provider: Array<{ update: Uint8Array; origin: unknown }> = []
  const onUpdate = (update: Uint8Array, origin: unknown) => provider.push({ update, origin })
  other.doc.on('update', onUpdate)
  assert.equal(other.applyDelta(events[1].delta, 'p'), true)
  assert.equal(provider.length, 1)
  assert.ok(isYjsRemoteOrigin(provider[0].origin) && provider[0].origin.origin === 'p')
  assert.equal(remote.at(-1)!.delta, events[1].delta)
  other.doc.off('update', onUpdate)
  // An observer that answers a remote change with a local one: both are emitted, the local one as local.
  const answer = (event: Y.YMapEvent<unknown>) => {
    if (isYjsRemoteOrigin(event.transaction.origin)) other.doc.getMap('seen').set('count', remote.length)
  }
  other.doc.getMap('map').observe(answer)
  const before = remote.length
  for (const event of events.slice(2)) other.applyDelta(event.delta, 'p')
  other.doc.getMap('map').unobserve(answer)
  const locals = remote.slice(before).filter((event) => event.local)
  assert.ok(locals.length >= 1, 'the observer-made change was emitted')
  const third = new YjsReplica({ agentId: id('c') })
  for (const event of remote) third.applyDelta(event.delta)
  assert.deepEqual(third.value(), other.value(), 'the events carry every change, remote and observer-made')
  assert.ok('seen' in other.value())
})

test('yjs: out-of-order deltas wait as pending, then the completing delta reports the completed structs', () => {
  const { replica, events } = richYjs()
  const other = new YjsReplica({ agentId: id('b') })
  const remote: ChangeEvent[] = []
  other.events.on('change', (event) => remote.push(event))
  assert.equal(other.applyDelta(events[1].delta), false, 'depends on the first insert: pending')
  assert.deepEqual(other.value(), {})
  assert.equal(other.applyDelta(events[0].delta), true)
  // The event carries both structs: a third replica gets the same state from it alone.
  const third = new YjsReplica({ agentId: id('c') })
  third.applyDelta(remote[0].delta)
  assert.deepEqual(third.doc.getText('text').toDelta(), other.doc.getText('text').toDelta())
  for (const event of events) other.applyDelta(event.delta)
  assert.deepEqual(other.value(), replica.value())
})

test('yjs: value() reads undeclared top-level types by inference, like the declared ones', () => {
  const { replica } = richYjs()
  const other = new YjsReplica({ agentId: id('b') })
  other.applyDelta(replica.deltaSince(other.version())!)
  assert.deepEqual(other.value(), {
    list: [1, 'two', { z: 1 }],
    map: { k: { deep: [1, 2, { x: null }] } },
    text: 'hlo 😀 world',
    xml: '<p class="c">hi</p>',
  })
  assert.deepEqual(other.value(), replica.value())
  // Inference did not fix the classes: the application may still open them.
  assert.equal(other.doc.getText('text').toString(), 'hlo 😀 world')
})

test('yjs: deltaSince is null only without structs and deletions; applyDelta inside a transaction is refused', () => {
  const replica = new YjsReplica({ agentId: id('a') })
  assert.equal(replica.deltaSince(replica.version()), null)
  replica.doc.getText('t').insert(0, 'ab')
  assert.equal(replica.deltaSince(replica.version()), null)
  replica.doc.getText('t').delete(0, 1)
  const withDeletes = replica.deltaSince(replica.version())
  assert.ok(withDeletes !== null, 'a state vector does not record deletions: the delete set is sent')
  assert.equal(replica.applyDelta(withDeletes!), false)
  const delta = replica.deltaSince(new YjsReplica({ agentId: id('x') }).version())!
  assert.throws(
    () => replica.doc.transact(() => replica.applyDelta(delta)),
    (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT),
  )
})

test('yjs: snapshots keep the gc setting; restore rewrites text, maps, arrays and XML in one change', () => {
  const { replica } = richYjs()
  const noGc = new YjsReplica({ agentId: id('g'), gc: false })
  noGc.doc.getText('t').insert(0, 'x')
  assert.equal(new YjsReplica({ agentId: id('h'), snapshot: noGc.snapshot() }).gc, false)
  assert.equal(new YjsReplica({ agentId: id('h'), snapshot: noGc.snapshot(), gc: true }).gc, true)
  const past = createReplica('yjs', { agentId: id('p'), snapshot: replica.snapshot() }) as YjsReplica
  const { doc } = replica
  doc.transact(() => {
    doc.getText('text').insert(0, 'XX')
    doc.getText('text').format(3, 2, { italic: true })
    doc.getMap('map').set('new', 1)
    ;(doc.getMap('map').get('k') as { deep: unknown[] }).deep
    doc.getArray('list').delete(0, 1)
    doc.getXmlFragment('xml').delete(0, 1)
    doc.getText('extra').insert(0, 'gone soon')
  })
  const events: ChangeEvent[] = []
  replica.events.on('change', (event) => events.push(event))
  const delta = replica.restore(past)
  assert.ok(delta)
  assert.equal(events.length, 1)
  assert.deepEqual(replica.value(), past.value())
  assert.deepEqual(replica.doc.getText('text').toDelta(), past.doc.getText('text').toDelta())
  assert.equal(replica.restore(past), null, 'nothing left to restore')
  // The restore replicates like any change.
  const follower = new YjsReplica({ agentId: id('f'), snapshot: past.snapshot() })
  assert.throws(
    () => replica.restore(new AutomergeReplica({ agentId: id('am') })),
    (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT),
  )
  follower.applyDelta(replica.deltaSince(follower.version())!)
  assert.deepEqual(follower.value(), past.value())
})

type Doc = { text: string; list: unknown[]; n?: number; c?: A.Counter; when?: Date; imm?: A.ImmutableString }

test('automerge: change events, duplicates, pending changes, unknown heads and snapshots', () => {
  const a = new AutomergeReplica<Doc>({ agentId: id('a'), initial: { text: '', list: [] } })
  const b = new AutomergeReplica<Doc>({ agentId: id('b'), initial: { text: '', list: [] } })
  const events: ChangeEvent[] = []
  a.events.on('change', (event) => events.push(event))
  a.change((doc) => {
    A.splice(doc, ['text'], 0, 0, 'hello')
    doc.list.push({ k: 'v' })
    doc.c = new A.Counter(1)
  })
  a.change((doc) => {
    A.splice(doc, ['text'], 5, 0, ' world')
    doc.n = 3
    doc.c!.increment(4)
  })
  assert.equal(
    a.change(() => {}),
    false,
    'an empty change is no change',
  )
  assert.equal(events.length, 2)
  assert.ok(events.every((event) => event.local))
  assert.equal(b.applyDelta(events[1].delta, 'peer'), false, 'missing its dependency: waits')
  assert.equal(b.applyDelta(events[0].delta, 'peer'), true)
  assert.deepEqual(b.value(), { c: 5, list: [{ k: 'v' }], n: 3, text: 'hello world' })
  assert.equal(b.applyDelta(events[0].delta), false)
  assert.equal(a.deltaSince(a.version()), null)
  // b has a change a does not know: a answers with the changes since the heads it knows.
  b.change((doc) => {
    doc.n = 10
  })
  const heads = decodeAutomergeHeads(b.version())
  assert.equal(heads.length, 1)
  // a does not know b's head, but b's change clock shows it holds every change of a's.
  assert.equal(a.deltaSince(b.version()), null, 'b lacks nothing of a')
  const fresh = new AutomergeReplica<Doc>({ agentId: id('c') })
  assert.ok(fresh.applyDelta(a.deltaSince(fresh.version())!))
  assert.deepEqual(fresh.value(), a.value())
  const loaded = createReplica('automerge', { agentId: id('s'), snapshot: a.snapshot() }) as AutomergeReplica<Doc>
  assert.deepEqual(loaded.value(), a.value())
  loaded.change((doc) => {
    doc.n = 4
  })
  assert.equal(a.applyDelta(loaded.deltaSince(a.version())!), true)
  assert.equal(a.doc.n, 4)
})

test('automerge: deltaSince sends exactly the changes the other lacks, also when both changed while apart', () => {
  const base = new AutomergeReplica<Doc>({ agentId: id('base'), initial: { text: '', list: [] } })
  for (let i = 0; i < 20; i++)
    base.change((doc) => {
      A.splice(doc, ['text'], doc.text.length, 0, `line ${i}\n`)
    })
  const x = new AutomergeReplica<Doc>({ agentId: id('x'), snapshot: base.snapshot() })
  const y = new AutomergeReplica<Doc>({ agentId: id('y'), snapshot: base.snapshot() })
  const z = new AutomergeReplica<Doc>({ agentId: id('z'), snapshot: base.snapshot() })
  const byX: Uint8Array[] = []
  const byY: Uint8Array[] = []
  x.events.on('change', (event) => {
    if (event.local) byX.push(event.delta)
  })
  y.events.on('change', (event) => {
    if (event.local) byY.push(event.delta)
  })
  // Apart: x makes 5 changes, y makes 3; y also receives x's first two through z (a relay).
  for (let i = 0; i < 5; i++)
    x.change((doc) => {
      A.splice(doc, ['text'], 0, 0, `x${i} `)
      doc.n = i
    })
  for (let i = 0; i < 3; i++)
    y.change((doc) => {
      doc.list.push({ k: `y${i}` })
      A.splice(doc, ['text'], doc.text.length, 0, `y${i}`)
    })
  for (const delta of byX.slice(0, 2)) z.applyDelta(delta)
  assert.ok(y.applyDelta(z.deltaSince(y.version())!))
  const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
  const chunksOf = (delta: Uint8Array) =>
    splitAutomergeChunks(delta, DEFAULT_DOCUMENT_LIMITS)
      .map((chunk) => {
        assert.equal(chunk.type, AutomergeChunkType.change, 'change chunks, not a whole document')
        return hexOf(chunk.bytes)
      })
      .sort()
  // Neither knows the other's heads, yet each sends exactly what the other lacks.
  assert.ok(!A.hasHeads(x.doc, A.getHeads(y.doc)) && !A.hasHeads(y.doc, A.getHeads(x.doc)))
  const toY = x.deltaSince(y.version())!
  const toX = y.deltaSince(x.version())!
  assert.deepEqual(chunksOf(toY), byX.slice(2).map(hexOf).sort(), 'x sends its 3 changes y lacks (not the 2 y got through z)')
  assert.deepEqual(chunksOf(toX), byY.map(hexOf).sort(), 'y sends its 3 changes')
  assert.equal(
    toY.length,
    byX.slice(2).reduce((n, d) => n + d.length, 0),
  )
  assert.equal(
    toX.length,
    byY.reduce((n, d) => n + d.length, 0),
  )
  assert.equal(y.applyDelta(toY), true)
  assert.equal(x.applyDelta(toX), true)
  assert.deepEqual(x.value(), y.value())
  assert.deepEqual(x.version(), y.version(), 'equal versions once converged')
  assert.equal(x.deltaSince(y.version()), null)
  assert.equal(y.deltaSince(x.version()), null)
  // The clock kept on change and apply equals one rebuilt from the document.
  for (const r of [x, y, z]) assert.deepEqual(new AutomergeReplica<Doc>({ agentId: id('r'), snapshot: r.snapshot() }).version(), r.version())
  // A fresh replica gets the whole document in one compressed chunk.
  const fresh = new AutomergeReplica<Doc>({ agentId: id('fresh') })
  const whole = x.deltaSince(fresh.version())!
  assert.equal(splitAutomergeChunks(whole, DEFAULT_DOCUMENT_LIMITS)[0].type, AutomergeChunkType.document)
  assert.equal(fresh.applyDelta(whole), true)
  assert.deepEqual(fresh.value(), x.value())
})

test('automerge: versions are format 2 (heads and clock); heads-only format 1 is still answered; bad versions are DecodeErrors', () => {
  const a = new AutomergeReplica<Doc>({ agentId: id('a'), initial: { text: '', list: [] }, actor: 'aa' })
  a.change((doc) => {
    doc.n = 1
  })
  const b = new AutomergeReplica<Doc>({ agentId: id('b'), snapshot: a.snapshot(), actor: 'bb' })
  b.change((doc) => {
    doc.n = 2
  })
  a.change((doc) => {
    doc.n = 3
  })
  const version = b.version()
  const decoded = decodeAutomergeVersion(version)
  assert.equal(version[0], 2)
  assert.deepEqual(decoded.heads, A.getHeads(b.doc))
  assert.deepEqual([...decoded.clock!].sort(), [
    ['00', 1],
    ['aa', 1],
    ['bb', 1],
  ])
  assert.deepEqual(encodeAutomergeVersion(decoded.heads, decoded.clock!), version, 'canonical round trip')
  // Format 1 (heads only): b's head is unknown to a, so a sends the whole document, as before.
  const headsOnly = new Uint8Array([1, decoded.heads.length, ...decoded.heads.flatMap((head) => head.match(/../g)!.map((h) => parseInt(h, 16)))])
  assert.equal(decodeAutomergeVersion(headsOnly).clock, null)
  const old = a.deltaSince(headsOnly)!
  assert.equal(splitAutomergeChunks(old, DEFAULT_DOCUMENT_LIMITS)[0].type, AutomergeChunkType.document)
  assert.equal(b.applyDelta(old), true)
  assert.equal(a.applyDelta(b.deltaSince(a.version())!), true)
  assert.deepEqual(b.value(), a.value())
  // Malformed versions.
  const before = a.version()
  const tail = version.subarray(1 + 1 + 32 * decoded.heads.length) // actor count, then actors
  const prefix = version.subarray(0, 1 + 1 + 32 * decoded.heads.length)
  const bad: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array()],
    ['format 3', new Uint8Array([3, 0, 0])],
    ['truncated', version.subarray(0, version.length - 1)],
    ['trailing byte', new Uint8Array([...version, 0])],
    ['seq 0', new Uint8Array([...prefix, 1, 1, 0xaa, 0])],
    ['actor of 0 bytes', new Uint8Array([...prefix, 1, 0, 1])],
    ['actors out of order', new Uint8Array([...prefix, 2, 1, 0xbb, 1, 1, 0xaa, 1])],
    ['actor listed twice', new Uint8Array([...prefix, 2, 1, 0xaa, 1, 1, 0xaa, 2])],
    ['actor of 129 bytes', new Uint8Array([...prefix, 1, 129, 1, ...new Uint8Array(129).fill(1), 1])],
    ['2^40 actors claimed', new Uint8Array([...prefix, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20])],
  ]
  assert.ok(tail.length > 0)
  for (const [what, bytes] of bad) {
    assert.throws(
      () => a.deltaSince(bytes),
      (error: unknown) => isConcordError(error, ErrorCodes.DECODE_ERROR),
      what,
    )
    assert.deepEqual(a.version(), before, `${what}: state unchanged`)
  }
})

test('automerge: value() is plain data; restore rewrites text, lists, counters and keys in one change', () => {
  const a = new AutomergeReplica<Doc>({ agentId: id('a'), initial: { text: '', list: [] } })
  a.change((doc) => {
    A.splice(doc, ['text'], 0, 0, 'hello world')
    doc.list.push(1, { k: 'v' }, 3)
    doc.c = new A.Counter(5)
    doc.when = new Date(0)
    doc.imm = new A.ImmutableString('fixed')
  })
  assert.deepEqual(a.value(), { c: 5, imm: 'fixed', list: [1, { k: 'v' }, 3], text: 'hello world', when: '1970-01-01T00:00:00.000Z' })
  const past = new AutomergeReplica<Doc>({ agentId: id('p'), snapshot: a.snapshot() })
  a.change((doc) => {
    A.splice(doc, ['text'], 0, 1, 'J')
    doc.list.splice(1, 1)
    doc.n = 9
    doc.c!.increment(10)
    doc.imm = new A.ImmutableString('changed')
  })
  const events: ChangeEvent[] = []
  a.events.on('change', (event) => events.push(event))
  assert.ok(a.restore(past))
  assert.equal(events.length, 1)
  assert.deepEqual(a.value(), past.value())
  assert.ok(A.isCounter(a.doc.c), 'a counter stays a counter')
  assert.equal(a.restore(past), null)
  assert.throws(
    () => a.restore(new YjsReplica({ agentId: id('y') })),
    (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT),
  )
})
