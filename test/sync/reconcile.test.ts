/**
 * Range-based reconciliation, the pure part (sync/reconcile.ts) and its
 * codec (sync/reconcile-codec.ts): rounds between two item sets find
 * exactly the names that differ, in O(d log n) bytes; malformed RANGES are
 * DecodeErrors, never allocations from a count.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { DecodeError } from '../../crdt/errors.ts'
import { stateDigest } from '../../crdt/state-digest.ts'
import { decodeMessage, encodeMessage } from '../../sync/messages.ts'
import { answerRanges, compareNames, ItemSet, itemOf, openingRanges, settled, type Item } from '../../sync/reconcile.ts'
import { readRanges, type Range } from '../../sync/reconcile-codec.ts'

function item(name: string, state: string): Item {
  return itemOf(name, 'gcounter', stateDigest(name, 'gcounter', new TextEncoder().encode(state), null))
}

function setOf(items: Item[]): ItemSet {
  return new ItemSet([...items].sort((a, b) => compareNames(a.name, b.name)))
}

/** Runs a whole reconciliation; returns what the initiator learned, what the responder found the initiator lacks, and the bytes both ways. */
function reconcile(initiator: ItemSet, responder: ItemSet) {
  const differ = new Set<string>()
  const lacking = new Set<string>()
  const push = new Set<string>()
  let bytes = 0
  let rounds = 0
  let ranges: Range[] = openingRanges(initiator)
  for (;;) {
    const sent = encodeMessage({ type: 'ranges', id: 1, role: 'initiator', ranges })
    bytes += sent.length
    const received = decodeMessage(sent)
    assert.equal(received.type, 'ranges')
    const answer = answerRanges(responder, (received as { ranges: readonly Range[] }).ranges, 'responder')
    for (const name of answer.weOnly) push.add(name)
    const reply = encodeMessage({ type: 'ranges', id: 1, role: 'responder', ranges: answer.reply })
    bytes += reply.length
    const back = decodeMessage(reply) as unknown as { ranges: readonly Range[] }
    const outcome = answerRanges(initiator, back.ranges, 'initiator')
    for (const name of outcome.differ) differ.add(name)
    for (const name of outcome.theyOnly) lacking.add(name)
    rounds++
    if (settled(outcome.reply)) break
    assert.ok(rounds < 64, 'the reconciliation ends')
    ranges = outcome.reply
  }
  return { differ, lacking, push, bytes, rounds }
}

test('reconciliation finds exactly the names that differ, in O(d log n) bytes', () => {
  const n = 20_000
  const common: Item[] = []
  for (let i = 0; i < n; i++) common.push(item(`task/${String(i).padStart(6, '0')}`, 'v1'))
  const changedOnResponder = [17, 4_000, 9_999, 15_001, 19_998].map((i) => `task/${String(i).padStart(6, '0')}`)
  const onlyResponder = ['task/000100x', 'zzz/late']
  const onlyInitiator = ['task/012345y']
  const responder = setOf([
    ...common.map((it) => (changedOnResponder.includes(it.name) ? item(it.name, 'v2') : it)),
    ...onlyResponder.map((name) => item(name, 'v1')),
  ])
  const initiator = setOf([...common, ...onlyInitiator.map((name) => item(name, 'v1'))])
  const result = reconcile(initiator, responder)
  assert.deepEqual([...result.differ].sort(), [...changedOnResponder].sort())
  // What the initiator lacks is found by one side or the other: listed back to it (it asks), or seen by the responder (it sends unasked).
  assert.deepEqual([...new Set([...result.lacking, ...result.push])].sort(), [...onlyResponder].sort())
  assert.ok(result.bytes < 16 * 1024, `${result.bytes} bytes for 8 differences among ${n} names`)
  const same = reconcile(initiator, setOf([...initiator.items]))
  assert.equal(same.differ.size + same.lacking.size + same.push.size, 0)
  assert.ok(same.bytes < 64, `equal sets cost ${same.bytes} bytes`)
})

test('reconciliation into an empty side: the responder sends everything unasked, and the initiator learns it lacks nothing else', () => {
  const responder = setOf(Array.from({ length: 500 }, (_, i) => item(`n${i}`, 'x')))
  const result = reconcile(setOf([]), responder)
  assert.equal(result.push.size, 500)
  assert.equal(result.differ.size, 0)
  assert.ok(result.bytes < 64, `${result.bytes} bytes`)
})

test('RANGES decoding: bounds and counts are checked before anything is allocated', () => {
  const frame = (write: (encoder: Encoder) => void): Uint8Array => {
    const encoder = new Encoder(64)
    write(encoder)
    return encoder.finish()
  }
  const bad: Array<[string, Uint8Array]> = [
    ['no ranges', frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(0))],
    ['a count over the bytes left', frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(1_000_000))],
    ['an unknown role', frame((e) => e.writeVarUint(1).writeUint8(7).writeVarUint(1).writeUint8(0).writeUint8(0))],
    ['an unknown mode', frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(1).writeUint8(9).writeUint8(0))],
    [
      'the last range short of infinity',
      frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(1).writeUint8(0).writeUint8(1).writeVarUint(0).writeString('a')),
    ],
    ['infinity before the last range', frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(2).writeUint8(0).writeUint8(0).writeUint8(0).writeUint8(0))],
    ['a list count over the bytes left', frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(1).writeUint8(2).writeVarUint(100_000))],
    [
      'a shared prefix longer than the previous name',
      frame((e) => e.writeVarUint(1).writeUint8(0).writeVarUint(2).writeUint8(0).writeUint8(1).writeVarUint(5).writeString('a').writeUint8(0).writeUint8(0)),
    ],
    [
      'bounds out of order',
      frame((e) =>
        e
          .writeVarUint(1)
          .writeUint8(0)
          .writeVarUint(3)
          .writeUint8(0)
          .writeUint8(1)
          .writeVarUint(0)
          .writeString('b')
          .writeUint8(0)
          .writeUint8(1)
          .writeVarUint(0)
          .writeString('a')
          .writeUint8(0)
          .writeUint8(0),
      ),
    ],
    [
      'an item beyond its range',
      frame((e) =>
        e
          .writeVarUint(1)
          .writeUint8(0)
          .writeVarUint(2)
          .writeUint8(2)
          .writeVarUint(1)
          .writeVarUint(0)
          .writeString('z')
          .writeRaw(new Uint8Array(8))
          .writeUint8(1)
          .writeVarUint(0)
          .writeString('m')
          .writeUint8(0)
          .writeUint8(0),
      ),
    ],
  ]
  for (const [what, bytes] of bad) assert.throws(() => readRanges(new Decoder(bytes)), DecodeError, what)
  // A well-formed one round-trips through the frame codec.
  const ranges: Range[] = [
    { mode: 'all', items: [{ name: 'task/1', hash: new Uint8Array(8).fill(1) }], upper: 'task/2' },
    { mode: 'fingerprint', fingerprint: new Uint8Array(8).fill(2), upper: 'task/20' },
    { mode: 'differ', items: [{ name: 'task/20', hash: new Uint8Array(8).fill(3) }], upper: null },
  ]
  assert.deepEqual(decodeMessage(encodeMessage({ type: 'ranges', id: 9, role: 'responder', ranges })), { type: 'ranges', id: 9, role: 'responder', ranges })
})
