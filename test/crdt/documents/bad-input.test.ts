/**
 * Malformed updates and snapshots against the document replicas: each is
 * rejected with DecodeError (CONCORD_DECODE_ERROR), the document is left
 * exactly as it was (value, version and snapshot bytes) and still usable.
 * Hand-written cases (empty, truncated, bit-flipped, huge claimed counts,
 * the Yjs issue 687 payload, deep nesting, a valid struct section followed
 * by a broken delete set, Automerge's empty buffer) plus fast-check fuzzers
 * with fixed seeds. A hang would trip the per-test timeout (a hang guard,
 * not a speed assertion); a huge allocation would show in the heap check.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as Y from 'yjs'
import * as A from '@automerge/automerge'
import fc from 'fast-check'
import { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import { validateYjsUpdate } from '../../../crdt/documents/yjs-guard.ts'
import { DEFAULT_DOCUMENT_LIMITS } from '../../../crdt/documents/options.ts'
import { encodeDocumentSnapshot } from '../../../crdt/documents/snapshot-envelope.ts'
import { ErrorCodes, isConcordError } from '../../../crdt/errors.ts'
import { bytesEqual } from '../../../crdt/codec.ts'
import { agentId } from '../../../crdt/agent-id.ts'

const HANG_GUARD = { timeout: 60_000 }

function hex(text: string): Uint8Array {
  return new Uint8Array(text.match(/../g)!.map((byte) => parseInt(byte, 16)))
}

/** A varuint as lib0 writes it. */
function varUint(n: number): number[] {
  const out: number[] = []
  while (n > 0x7f) {
    out.push((n % 128) | 0x80)
    n = Math.floor(n / 128)
  }
  out.push(n)
  return out
}

/** A Yjs source doc with text, map, array and deletions; its updates; and a replica holding part of it. */
function yjsFixture() {
  const source = new Y.Doc()
  source.clientID = 7
  const updates: Uint8Array[] = []
  source.on('update', (update: Uint8Array) => updates.push(update))
  const text = source.getText('text')
  text.insert(0, 'hello world')
  text.format(0, 5, { bold: true })
  source.getMap('map').set('k', { nested: [1, 'two', null] })
  source.getArray('list').push([1, 2.5, 'x', new Uint8Array([1, 2])])
  text.delete(2, 3)
  source.getMap('map').delete('k')
  text.insert(3, 'é😀')
  return { source, updates, full: Y.encodeStateAsUpdate(source) }
}

interface Fingerprint {
  value: string
  version: Uint8Array
  snapshot: Uint8Array
}

function fingerprint(replica: YjsReplica | AutomergeReplica): Fingerprint {
  return { value: JSON.stringify(replica.value(), (_, v) => (v instanceof Uint8Array ? [...v] : v)), version: replica.version(), snapshot: replica.snapshot() }
}

function assertUnchanged(replica: YjsReplica | AutomergeReplica, before: Fingerprint): void {
  const after = fingerprint(replica)
  assert.equal(after.value, before.value)
  assert.ok(bytesEqual(after.version, before.version), 'version unchanged')
  assert.ok(bytesEqual(after.snapshot, before.snapshot), 'snapshot unchanged')
}

function assertRejected(fn: () => unknown, what: string): void {
  assert.throws(fn, (error: unknown) => isConcordError(error, ErrorCodes.DECODE_ERROR), what)
}

/** Rejected with DecodeError, nothing changed, no change event. */
function assertYjsRejects(replica: YjsReplica, bytes: Uint8Array, what: string): void {
  const before = fingerprint(replica)
  let events = 0
  const off = replica.events.on('change', () => events++)
  try {
    assertRejected(() => replica.applyDelta(bytes), what)
  } finally {
    off()
  }
  assert.equal(events, 0, `${what}: no change event`)
  assertUnchanged(replica, before)
}

/** Still usable: a local edit and a valid remote delta both work. */
function assertYjsUsable(replica: YjsReplica, fixture: ReturnType<typeof yjsFixture>): void {
  replica.applyDelta(fixture.full)
  replica.doc.getText('scratch').insert(0, 'ok')
  assert.equal(replica.doc.getText('scratch').toString().startsWith('ok'), true)
  replica.doc.getText('scratch').delete(0, 2)
}

function yjsReplica(fixture: ReturnType<typeof yjsFixture>): YjsReplica {
  const replica = new YjsReplica({ agentId: agentId('target') })
  replica.applyDelta(fixture.updates[0])
  return replica
}

test('yjs: hand-written malformed updates are rejected, the doc unchanged and usable', HANG_GUARD, () => {
  const fixture = yjsFixture()
  const replica = yjsReplica(fixture)
  const heapBefore = process.memoryUsage().heapUsed
  const single = fixture.updates[0]
  const cases: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array()],
    ['one zero byte', new Uint8Array([0])],
    ['one byte 0xff', new Uint8Array([0xff])],
    ['unterminated varuint', new Uint8Array([0x80, 0x80, 0x80])],
    ['varuint over 2^53', new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0])],
    ['issue 687 v2 payload given as v1', hex('00010000000001000100010200001602000001fdffffffff7f0000')],
    ['garbage from issue 479', Uint8Array.from(atob('garbagedoc'), (c) => c.charCodeAt(0))],
    ['2^32 clients claimed', new Uint8Array([...varUint(2 ** 32), 1, 1, 0])],
    ['2^32 structs claimed for one client', new Uint8Array([1, ...varUint(2 ** 32), 5, 0, 0, 1, 0, 0])],
    ['2^50 structs claimed', new Uint8Array([1, ...varUint(2 ** 50), 5, 0, 10, 1, 0])],
    ['GC struct of length 0', new Uint8Array([1, 1, 5, 0, 0, 0, 0])],
    ['unknown content ref 11', new Uint8Array([1, 1, 5, 0, 11, 1, 0])],
    ['type ref 9', new Uint8Array([1, 1, 5, 0, 7, 1, 1, 0x74, 9, 0])],
    ['string length 2^40 in 3 bytes', new Uint8Array([1, 1, 5, 0, 4, 1, 1, 0x74, ...varUint(2 ** 40)])],
    ['any content claims 2^31 values', new Uint8Array([1, 1, 5, 0, 8, 1, 1, 0x74, ...varUint(2 ** 31), 126, 0])],
    ['unknown any tag', new Uint8Array([1, 1, 5, 0, 8, 1, 1, 0x74, 1, 50, 0])],
    ['invalid UTF-8 in a string', new Uint8Array([1, 1, 5, 0, 4, 1, 1, 0x74, 2, 0xc3, 0x28, 0])],
    ['JSON content that is not JSON', new Uint8Array([1, 1, 5, 0, 2, 1, 1, 0x74, 1, 1, 0x7b, 0])],
    ['parent info 2', new Uint8Array([1, 1, 5, 0, 4, 2, 1, 0x61, 0])],
    ['origin pointing forward in its own client', new Uint8Array([1, 1, 5, 3, 0x84, 5, 9, 1, 0x61, 0])],
    ['subdocument content', new Uint8Array([1, 1, 5, 0, 9, 1, 1, 0x74, 1, 0x67, 118, 0, 0])],
    ['client listed twice', new Uint8Array([2, 1, 5, 0, 0, 1, 1, 5, 1, 0, 1, 0])],
    ['delete set count over the remaining bytes', new Uint8Array([0, 1, 5, ...varUint(2 ** 30), 0, 1])],
    ['delete range of length 0 (Yjs throws re-encoding it as pending)', new Uint8Array([0, 1, 9, 1, 40, 0])],
    ['delete range over 2^53', new Uint8Array([0, 1, 5, 1, ...varUint(2 ** 53 - 1), 5])],
    ['valid update plus a trailing byte', new Uint8Array([...single, 0])],
  ]
  // Deep nesting in an any value: 100k nested arrays in 200k bytes.
  const deep = [1, 1, 5, 0, 8, 1, 1, 0x74, 1]
  for (let i = 0; i < 100_000; i++) deep.push(117, 1)
  deep.push(126, 0)
  cases.push(['100k nested arrays', new Uint8Array(deep)])
  // A valid struct section followed by a broken delete set: Yjs would
  // integrate the structs, then throw (a partial apply).
  const structsOnly = fixture.updates[1].subarray(0, fixture.updates[1].length - 1)
  cases.push(['valid structs, truncated delete set', new Uint8Array([...structsOnly, 1, 7, 5])])
  for (const [what, bytes] of cases) assertYjsRejects(replica, bytes, what)
  // Every truncation of every fixture update.
  for (const update of [...fixture.updates, fixture.full]) {
    for (let length = 0; length < update.length; length++) assertYjsRejects(replica, update.subarray(0, length), `truncated to ${length}`)
  }
  assert.ok(process.memoryUsage().heapUsed - heapBefore < 256 * 1024 * 1024, 'no large allocation')
  assertYjsUsable(replica, fixture)
})

test('yjs: an item whose origin and right origin are the same character is rejected (replicas would place it differently)', HANG_GUARD, () => {
  // Client 5: "a" at 5:0, "b" at 5:1 after it, then "ab" at 5:2 with origin 5:1 and right origin 5:1.
  // Found by the law suite (CONCORD_SEED=1): a bit flip in a clock; Yjs placed the item by how
  // its store happened to be split, so the replica differed from its own reloaded snapshot.
  const text = [0x04, 1, 4, 0x74, 0x65, 0x78, 0x74, 1, 0x61] // "a", parent by key "text"
  const update = (origin: number, right: number) => new Uint8Array([1, 3, 5, 0, ...text, 0x84, 5, 0, 1, 0x62, 0xc4, 5, origin, 5, right, 2, 0x61, 0x62, 0])
  const replica = new YjsReplica({ agentId: agentId('target') })
  assertYjsRejects(replica, update(1, 1), 'origin and right origin are both 5:1')
  assertYjsRejects(replica, new Uint8Array([1, 1, 6, 0, 0xc4, 5, 0, 5, 0, 1, 0x78, 0]), 'origin and right origin both name a character of another update')
  // The same item with a right origin after its origin: accepted (text "a", "ab" between "a" and "b": "aabb").
  const valid = new YjsReplica({ agentId: agentId('valid') })
  assert.equal(valid.applyDelta(update(0, 1)), true)
  assert.equal(valid.doc.getText('text').toString(), 'aabb')
  // A client typing before its own older text makes right origins with lower clocks than origins: accepted.
  const source = new Y.Doc()
  source.clientID = 5
  const updates: Uint8Array[] = []
  source.on('update', (u: Uint8Array) => updates.push(u))
  source.getText('text').insert(0, 'b')
  source.getText('text').insert(0, 'a')
  source.getText('text').insert(1, 'c') // origin 5:1, right origin 5:0
  const oneByOne = new YjsReplica({ agentId: agentId('x') })
  for (const u of updates) assert.equal(oneByOne.applyDelta(u), true)
  const whole = new YjsReplica({ agentId: agentId('y') })
  assert.equal(whole.applyDelta(Y.encodeStateAsUpdate(source)), true)
  assert.equal(oneByOne.doc.getText('text').toString(), 'acb')
  assert.equal(whole.doc.getText('text').toString(), 'acb')
})

test('yjs: a bad version to deltaSince and bad snapshots are DecodeErrors', HANG_GUARD, () => {
  const fixture = yjsFixture()
  const replica = yjsReplica(fixture)
  for (const version of [new Uint8Array(), new Uint8Array([5, 1]), new Uint8Array([...varUint(2 ** 40), 1, 1]), new Uint8Array([1, 1, 1, 9])]) {
    assertRejected(() => replica.deltaSince(version), 'bad version')
  }
  const good = replica.snapshot()
  const snapshots: Uint8Array[] = [
    new Uint8Array(),
    new Uint8Array([2, ...good.subarray(1)]), // unknown version
    new Uint8Array([1, 2, ...good.subarray(2)]), // an Automerge snapshot
    new Uint8Array([1, 1, 4, ...good.subarray(3)]), // unknown flag
    good.subarray(0, good.length - 1),
    encodeDocumentSnapshot({ kind: 'yjs', gc: true, payload: new Uint8Array() }),
    encodeDocumentSnapshot({ kind: 'yjs', gc: true, payload: hex('00010000000001000100010200001602000001fdffffffff7f0000') }),
  ]
  for (const snapshot of snapshots) assertRejected(() => new YjsReplica({ agentId: agentId('s'), snapshot }), 'bad snapshot')
  assert.deepEqual(new YjsReplica({ agentId: agentId('s'), snapshot: good }).value(), replica.value())
})

/** Mutations of real updates: flips, truncations, insertions, deletions, splices. */
function mutatedUpdate(corpus: Uint8Array[]): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(
      fc.integer({ min: 0, max: corpus.length - 1 }),
      fc.array(
        fc.oneof(
          fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
          fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
          fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 6 }) }),
          fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 6 }) }),
          fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
          fc.record({ kind: fc.constant('bigvarint' as const), at: fc.nat() }),
        ),
        { minLength: 1, maxLength: 4 },
      ),
    )
    .map(([index, mutations]) => {
      let bytes = [...corpus[index]]
      for (const m of mutations) {
        const at = bytes.length === 0 ? 0 : m.at % bytes.length
        if (m.kind === 'flip') bytes[at] ^= 1 << m.bit
        else if (m.kind === 'set') bytes[at] = m.byte
        else if (m.kind === 'insert') bytes.splice(at, 0, ...m.bytes)
        else if (m.kind === 'delete') bytes.splice(at, m.count)
        else if (m.kind === 'truncate') bytes = bytes.slice(0, at)
        else bytes.splice(at, 1, 0xff, 0xff, 0xff, 0xff, 0x0f)
      }
      return new Uint8Array(bytes)
    })
}

test('yjs fuzz: mutated and random updates are rejected cleanly, or applied without Yjs throwing', HANG_GUARD, () => {
  const fixture = yjsFixture()
  const corpus = [...fixture.updates, fixture.full]
  let rejected = 0
  let accepted = 0
  fc.assert(
    fc.property(fc.oneof({ weight: 4, arbitrary: mutatedUpdate(corpus) }, { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) }), (bytes) => {
      const replica = yjsReplica(fixture)
      let valid = true
      try {
        validateYjsUpdate(bytes, DEFAULT_DOCUMENT_LIMITS)
      } catch (error) {
        assert.ok(isConcordError(error, ErrorCodes.DECODE_ERROR))
        valid = false
      }
      if (!valid) {
        rejected++
        assertYjsRejects(replica, bytes, 'fuzzed update')
      } else {
        accepted++
        // The guard accepted it: Yjs must apply it without throwing (a throw
        // inside Yjs is where partial applies come from).
        replica.applyDelta(bytes)
      }
      assertYjsUsable(replica, fixture)
    }),
    { seed: 20240603, numRuns: 3000 },
  )
  assert.ok(rejected > 1000, `most fuzzed inputs are malformed (${rejected} rejected, ${accepted} accepted)`)
  assert.ok(accepted > 0, 'some mutations stay well-formed and are applied')
})

function automergeFixture() {
  const source = new AutomergeReplica<{ text: string; n?: number; list?: number[] }>({ agentId: agentId('source'), initial: { text: '' } })
  const changes: Uint8Array[] = []
  source.events.on('change', ({ delta }) => changes.push(delta))
  source.change((doc) => {
    A.splice(doc, ['text'], 0, 0, 'hello')
  })
  source.change((doc) => {
    doc.n = 1
    doc.list = [1, 2, 3]
  })
  source.change((doc) => {
    A.splice(doc, ['text'], 5, 0, ' world')
    doc.list!.push(4)
  })
  return { source, changes, save: A.save(source.doc) }
}

function automergeReplica(fixture: ReturnType<typeof automergeFixture>): AutomergeReplica<{ text: string; n?: number; list?: number[] }> {
  const replica = new AutomergeReplica<{ text: string; n?: number; list?: number[] }>({ agentId: agentId('target'), initial: { text: '' } })
  replica.applyDelta(fixture.changes[0])
  return replica
}

function assertAutomergeRejects(replica: AutomergeReplica<never> | AutomergeReplica<{ text: string }>, bytes: Uint8Array, what: string): void {
  const before = fingerprint(replica as AutomergeReplica)
  let events = 0
  const off = replica.events.on('change', () => events++)
  try {
    assertRejected(() => replica.applyDelta(bytes), what)
  } finally {
    off()
  }
  assert.equal(events, 0)
  assertUnchanged(replica as AutomergeReplica, before)
}

function assertAutomergeUsable(replica: AutomergeReplica<{ text: string; n?: number }>, fixture: ReturnType<typeof automergeFixture>): void {
  replica.applyDelta(fixture.save)
  const n = (replica.doc.n ?? 0) + 1
  replica.change((doc) => {
    doc.n = n
  })
  assert.equal(replica.doc.n, n)
}

test('automerge: hand-written malformed deltas are rejected, the doc unchanged and usable', HANG_GUARD, () => {
  const fixture = automergeFixture()
  const replica = automergeReplica(fixture)
  const change = fixture.changes[1]
  const flipped = (bytes: Uint8Array, at: number) => {
    const copy = bytes.slice()
    copy[at] ^= 0x04
    return copy
  }
  const cases: Array<[string, Uint8Array]> = [
    ['empty buffer (Automerge loads it as an empty document)', new Uint8Array()],
    ['magic only', change.subarray(0, 4)],
    ['bad magic', flipped(change, 0)],
    ['bad checksum', flipped(change, 5)],
    ['payload bit flip (Automerge alone accepts it as another change)', flipped(change, 20)],
    ['chunk type 2 (compressed)', new Uint8Array([...change.subarray(0, 8), 2, ...change.subarray(9)])],
    ['chunk type 7', new Uint8Array([...change.subarray(0, 8), 7, ...change.subarray(9)])],
    ['chunk length 2^40', new Uint8Array([...change.subarray(0, 9), ...varUint(2 ** 40), 0])],
    ['valid change plus garbage (loadIncremental would apply the change)', new Uint8Array([...change, 1, 2, 3])],
    ['valid change plus a truncated one', new Uint8Array([...change, ...fixture.changes[2].subarray(0, 30)])],
    ['document chunk with a flipped byte', flipped(fixture.save, 40)],
    ['truncated document chunk', fixture.save.subarray(0, fixture.save.length - 3)],
    ['random bytes', new Uint8Array(Array.from({ length: 64 }, (_, i) => (i * 37 + 11) & 0xff))],
  ]
  for (const [what, bytes] of cases) assertAutomergeRejects(replica, bytes, what)
  for (const bytes of [...fixture.changes, fixture.save]) {
    for (let length = 0; length < bytes.length; length++) assertAutomergeRejects(replica, bytes.subarray(0, length), `truncated to ${length}`)
  }
  for (const version of [new Uint8Array(), new Uint8Array([1, 1]), new Uint8Array([2, 0]), new Uint8Array([1, ...varUint(2 ** 40)])]) {
    assertRejected(() => replica.deltaSince(version), 'bad heads')
  }
  const snapshots = [
    new Uint8Array(),
    encodeDocumentSnapshot({ kind: 'automerge', gc: false, payload: new Uint8Array() }),
    encodeDocumentSnapshot({ kind: 'automerge', gc: false, payload: flipped(fixture.save, 30) }),
    encodeDocumentSnapshot({ kind: 'yjs', gc: false, payload: fixture.save }),
  ]
  for (const snapshot of snapshots) assertRejected(() => new AutomergeReplica({ agentId: agentId('s'), snapshot }), 'bad snapshot')
  assertAutomergeUsable(replica, fixture)
})

test('automerge fuzz: mutated and random deltas are rejected cleanly', HANG_GUARD, () => {
  const fixture = automergeFixture()
  const corpus = [...fixture.changes, fixture.save]
  let rejected = 0
  fc.assert(
    fc.property(fc.oneof({ weight: 4, arbitrary: mutatedUpdate(corpus) }, { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) }), (bytes) => {
      const replica = automergeReplica(fixture)
      if (corpus.some((valid) => bytesEqual(valid, bytes))) return
      // Every change chunk is checksummed, so no mutation of one stays valid.
      rejected++
      assertAutomergeRejects(replica, bytes, 'fuzzed delta')
      assertAutomergeUsable(replica, fixture)
    }),
    { seed: 20240604, numRuns: 600 },
  )
  assert.ok(rejected > 500)
})
