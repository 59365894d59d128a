/**
 * `Replica.prepareDelta` (crdt/replica.ts): the check half of `applyDelta`,
 * which a holder runs on every delta of a unit before applying any, so that
 * each delta is decoded once. Over every type: prepare-then-apply is
 * applyDelta (same state, same events, and it returns the bytes that
 * changed the state); a bad delta or one over the holder's limits throws
 * at prepare with the state untouched; deltas that let waiting updates in
 * return their merge (what a store logs); two prepared deltas of one Yjs
 * document, the second building on the first, both apply; a strict prepare
 * parses an Automerge change that would otherwise wait unparsed.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import { AutomergeReplica } from '../../crdt/documents/automerge-replica.ts'
import { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { isConcordError } from '../../crdt/errors.ts'
import type { ChangeEvent, Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { ALL_TYPES, makeReplica, mutate } from '../sync/helpers/memory-host.ts'

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
const SEEDS = 30

/** A delta from a random history of another replica of `type`, against `base`'s version. */
function someDelta(type: Replica['type'], base: Replica, random: Prng, tag: string): Uint8Array | null {
  const other = makeReplica(type, `o-${tag}`)
  const fromBase = base.deltaSince(other.version())
  if (fromBase) other.applyDelta(fromBase)
  for (let i = 0, n = random.int(1, 4); i < n; i++) mutate(other, random, `${tag}${i}`)
  return other.deltaSince(base.version())
}

describe('prepareDelta', () => {
  for (const type of ALL_TYPES) {
    it(`${type}: prepare then apply is applyDelta (state, change events, and the bytes that changed it), over ${SEEDS} seeds`, () => {
      for (let seed = 1; seed <= SEEDS; seed++) {
        const random = new Prng(seed)
        const viaApply = makeReplica(type, 'a')
        const viaPrepare = makeReplica(type, 'a')
        const events: Array<{ local: boolean; delta: string }> = []
        viaPrepare.events.on('change', (event) => events.push({ local: event.local, delta: hex(event.delta) }))
        for (let step = 0; step < 4; step++) {
          const delta = someDelta(type, viaPrepare, random, `s${seed}-${step}`)
          if (!delta) continue
          const changed = viaApply.applyDelta(delta)
          const before = events.length
          const applied = viaPrepare.prepareDelta!(delta).apply('origin')
          assert.equal(applied !== null, changed, `${type} seed ${seed}: the same verdict`)
          if (applied !== null) {
            assert.equal(events.length, before + 1, `${type} seed ${seed}: one change event`)
            assert.equal(hex(applied), events.at(-1)!.delta, `${type} seed ${seed}: apply returns what the change event carries`)
            assert.equal(hex(applied), hex(delta), `${type} seed ${seed}: nothing waited, so the delta itself`)
          }
          // Applied again: nothing changes.
          assert.equal(viaPrepare.prepareDelta!(delta).apply(), null, `${type} seed ${seed}: a delta seen is no change`)
        }
        assert.equal(JSON.stringify(viaPrepare.value()), JSON.stringify(viaApply.value()), `${type} seed ${seed}: same value`)
        assert.equal(hex(viaPrepare.version()), hex(viaApply.version()), `${type} seed ${seed}: same version`)
      }
    })

    it(`${type}: a malformed delta throws at prepare (DecodeError) and the state is untouched; a prepared delta applies once`, () => {
      const random = new Prng(7)
      const replica = makeReplica(type, 'a')
      mutate(replica, random, 'x')
      const snapshot = hex(replica.snapshot())
      const delta = someDelta(type, replica, random, 'bad')!
      const broken = delta.slice(0, Math.max(1, delta.length - 3))
      assert.throws(
        () => replica.prepareDelta!(broken),
        (error) => isConcordError(error, 'CONCORD_DECODE_ERROR'),
      )
      assert.throws(
        () => replica.prepareDelta!(new Uint8Array(0)),
        (error) => isConcordError(error),
      )
      assert.equal(hex(replica.snapshot()), snapshot)
      const prepared = replica.prepareDelta!(delta)
      assert.notEqual(prepared.apply(), null)
      assert.throws(
        () => prepared.apply(),
        (error) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'),
      )
    })
  }

  it("yjs: the holder's limits apply on top of the replica's own, in the same walk (CONCORD_LIMIT_EXCEEDED, nothing applied)", () => {
    const source = new Y.Doc()
    source.getText('t').insert(0, 'x'.repeat(5000))
    const update = Y.encodeStateAsUpdate(source)
    const replica = new YjsReplica({ agentId: agentId('r'), limits: { maxInsertedBytes: Infinity, maxOperations: Infinity } })
    assert.throws(
      () => replica.prepareDelta(update, { limits: { maxInsertedBytes: 1000 } }),
      (error) => isConcordError(error, 'CONCORD_LIMIT_EXCEEDED'),
    )
    assert.throws(
      () => replica.prepareDelta(update, { limits: { maxBytes: 100 } }),
      (error) => isConcordError(error),
    )
    assert.equal(replica.doc.getText('t').length, 0)
    // A looser holder limit does not loosen the replica's own.
    const tight = new YjsReplica({ agentId: agentId('r'), limits: { maxInsertedBytes: 1000 } })
    assert.throws(
      () => tight.prepareDelta(update, { limits: { maxInsertedBytes: 1 << 30 } }),
      (error) => isConcordError(error, 'CONCORD_LIMIT_EXCEEDED'),
    )
    assert.notEqual(replica.prepareDelta(update, { limits: { maxInsertedBytes: 10_000 } }).apply(), null)
    assert.equal(replica.doc.getText('t').length, 5000)
  })

  it("automerge: the holder's limits apply at prepare (CONCORD_LIMIT_EXCEEDED, nothing applied)", () => {
    const doc = A.change(A.init<{ text: string }>(), (d) => {
      d.text = 'y'.repeat(3000)
    })
    const change = A.getLastLocalChange(doc)!
    const replica = new AutomergeReplica({ agentId: agentId('r'), limits: { maxOperations: Infinity, maxInsertedBytes: Infinity } })
    assert.throws(
      () => replica.prepareDelta(change, { limits: { maxOperations: 100 } }),
      (error) => isConcordError(error, 'CONCORD_LIMIT_EXCEEDED'),
    )
    assert.deepEqual(replica.value(), {})
    assert.notEqual(replica.prepareDelta(change, { limits: { maxOperations: 10_000 } }).apply(), null)
    assert.equal((replica.value() as { text: string }).text.length, 3000)
  })

  it('yjs: a delta that lets waiting updates in returns their merge, which is what its change event carries', () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (update: Uint8Array) => updates.push(update))
    const text = source.getText('t')
    for (let i = 0; i < 5; i++) text.insert(text.length, `${i};`)
    const replica = new YjsReplica({ agentId: agentId('r') })
    const events: ChangeEvent[] = []
    replica.on('change', (event) => events.push(event))
    for (const update of updates.slice(1)) assert.equal(replica.prepareDelta(update).apply(), null, 'waits')
    const applied = replica.prepareDelta(updates[0]).apply()!
    assert.equal(events.length, 1)
    assert.equal(hex(applied), hex(events[0].delta))
    assert.ok(applied.length > updates[0].length, 'the merge of the delta and the four that waited')
    const copy = new Y.Doc()
    Y.applyUpdate(copy, applied)
    assert.equal(copy.getText('t').toString(), text.toString(), 'the returned bytes alone give the whole text')
  })

  it('automerge: a delta that lets waiting changes in returns their merge, which is what its change event carries', () => {
    let doc = A.init<{ n: number[] }>()
    const changes: Uint8Array[] = []
    doc = A.change(doc, (d) => {
      d.n = []
    })
    changes.push(A.getLastLocalChange(doc)!)
    for (let i = 0; i < 4; i++) {
      doc = A.change(doc, (d) => {
        d.n.push(i)
      })
      changes.push(A.getLastLocalChange(doc)!)
    }
    const replica = new AutomergeReplica({ agentId: agentId('r') })
    const events: ChangeEvent[] = []
    replica.on('change', (event) => events.push(event))
    for (const change of changes.slice(1)) assert.equal(replica.prepareDelta(change).apply(), null, 'waits')
    const applied = replica.prepareDelta(changes[0]).apply()!
    assert.equal(events.length, 1)
    assert.equal(hex(applied), hex(events[0].delta))
    const copy = new AutomergeReplica({ agentId: agentId('c') })
    copy.applyDelta(applied)
    assert.deepEqual(copy.value(), { n: [0, 1, 2, 3] }, 'the returned bytes alone give the whole document')
  })

  it('yjs: two deltas prepared together, the second building on the first, both apply (its dependencies are read again once the first changed the document)', () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (update: Uint8Array) => updates.push(update))
    source.getText('t').insert(0, 'first ')
    source.getText('t').insert(6, 'second')
    const replica = new YjsReplica({ agentId: agentId('r') })
    const first = replica.prepareDelta(updates[0], { strict: true })
    const second = replica.prepareDelta(updates[1], { strict: true })
    assert.notEqual(first.apply(), null)
    assert.notEqual(second.apply(), null, 'applied, not held as waiting')
    assert.equal(replica.doc.getText('t').toString(), 'first second')
    assert.equal(replica.waitingStats().updates, 0)
  })

  it('yjs: a strict prepare inside a transaction of the document refuses at once, before anything is applied', () => {
    const source = new Y.Doc()
    source.getText('t').insert(0, 'x')
    const update = Y.encodeStateAsUpdate(source)
    const replica = new YjsReplica({ agentId: agentId('r') })
    replica.doc.transact(() => {
      assert.throws(
        () => replica.prepareDelta(update, { strict: true }),
        (error) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'),
      )
    })
    assert.equal(replica.doc.getText('t').length, 0)
  })

  it('automerge: a strict prepare parses a change that would wait for a missing dependency (a malformed one is refused now, not when it is let in)', () => {
    let doc = A.change(A.init<{ a?: number; b?: string }>(), (d) => {
      d.a = 1
    })
    doc = A.change(doc, (d) => {
      d.b = 'zzzzzzzz'
    })
    const second = A.getLastLocalChange(doc)!
    // Invalid UTF-8 in the string's value bytes, with the chunk checksum fixed: only Automerge's parse can tell.
    const damaged = withBytes(second, 'zzzzzzzz', 0xff)
    const replica = new AutomergeReplica({ agentId: agentId('r') })
    // Not strict: the change waits unparsed (it lacks its dependency).
    assert.equal(replica.prepareDelta(damaged).apply(), null)
    assert.equal(replica.waitingStats().updates, 1)
    const other = new AutomergeReplica({ agentId: agentId('s') })
    assert.throws(
      () => other.prepareDelta(damaged, { strict: true }),
      (error) => isConcordError(error, 'CONCORD_DECODE_ERROR'),
    )
    assert.equal(other.waitingStats().updates, 0)
    // The intact change passes a strict prepare and waits like any.
    assert.equal(other.prepareDelta(second, { strict: true }).apply(), null)
    assert.equal(other.waitingStats().updates, 1)
  })

  it('automerge: a whole document strictly prepared for an empty replica applies as that replica (its actor), also when it is no longer empty or applied in a later turn', async () => {
    type Plan = { steps?: string[]; owner?: string }
    const source = new AutomergeReplica<Plan>({ agentId: agentId('s') })
    source.change((d) => void (d.steps = ['gather', 'decide']))
    const whole = source.deltaSince(new AutomergeReplica({ agentId: agentId('e') }).version())!
    const plainOf = (replica: AutomergeReplica<Plan>) => JSON.stringify(replica.value())

    // Applied in the same turn: the document, and a later local change is the replica's own.
    const empty = new AutomergeReplica<Plan>({ agentId: agentId('r') })
    const events: ChangeEvent[] = []
    empty.on('change', (event) => events.push(event))
    assert.deepEqual(empty.prepareDelta(whole, { strict: true }).apply(), whole)
    assert.equal(plainOf(empty), plainOf(source))
    assert.equal(events.length, 1)
    const localBefore = empty.version()
    empty.change((d) => void (d.owner = 'r'))
    assert.ok(empty.deltaSince(localBefore))
    assert.ok(source.applyDelta(empty.deltaSince(source.version())!))
    assert.equal(plainOf(source), plainOf(empty), 'the local change merges back: a distinct actor')

    // The replica changed between prepare and apply: the document merges in, nothing of its own is lost.
    const busy = new AutomergeReplica<Plan>({ agentId: agentId('b') })
    const prepared = busy.prepareDelta(whole, { strict: true })
    busy.change((d) => void (d.owner = 'b'))
    assert.ok(prepared.apply())
    assert.deepEqual(busy.value(), { steps: ['gather', 'decide'], owner: 'b' })

    // Applied in a later turn (what the prepare loaded was freed): still applies.
    const later = new AutomergeReplica<Plan>({ agentId: agentId('l') })
    const held = later.prepareDelta(whole, { strict: true })
    await new Promise((resolve) => setTimeout(resolve, 0))
    assert.deepEqual(held.apply(), whole)
    assert.deepEqual(later.value(), { steps: ['gather', 'decide'] })
  })
})

/**
 * An Automerge change chunk with the bytes of `text` in it overwritten by
 * `byte`, and its checksum (bytes 4..8: the start of the SHA-256 of the
 * chunk type, length and body) recomputed, so that the framing checks pass.
 */
function withBytes(chunk: Uint8Array, text: string, byte: number): Uint8Array {
  const out = chunk.slice()
  const at = Buffer.from(out).indexOf(Buffer.from(text))
  assert.ok(at > 0)
  out.fill(byte, at, at + text.length)
  out.set(createHash('sha256').update(out.subarray(8)).digest().subarray(0, 4), 4)
  return out
}
