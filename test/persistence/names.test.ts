/**
 * Names must be well-formed Unicode: a lone surrogate does not survive
 * UTF-8 (`'x\uD800'` and `'x\uDBFF'` both encode as `'x\uFFFD'`), so two
 * such names used to share one key and then fail forever with
 * CONCORD_CORRUPT_RECORD. They are refused with CONCORD_INVALID_ARGUMENT by
 * the store and the peer, and the wire neither sends nor accepts them.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import { createPeer } from '../../peer/index.ts'
import { openStore } from '../../persistence/index.ts'
import { decodeMessage, encodeMessage } from '../../sync/messages.ts'
import { tempDir } from './helpers.ts'

const LONE = ['x\uD800', 'x\uDBFF', 'x\uDC00', '\uDFFFx', 'a\uD800\uD800b']
const invalid = (error: unknown): boolean => isConcordError(error, 'CONCORD_INVALID_ARGUMENT')

it('the store refuses names with lone surrogates (open, commit, every other call) and keeps well-formed ones apart', async () => {
  const { dir, remove } = await tempDir()
  try {
    let store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    for (const name of LONE) {
      await assert.rejects(store.open(name, 'orset'), invalid, name)
      await assert.rejects(store.applyRemote(name, new Uint8Array([1]), { type: 'orset' }), invalid, name)
      await assert.rejects(store.history(name), invalid, name)
      await assert.rejects(store.typeOf(name), invalid, name)
    }
    // Well-formed names that look alike stay distinct, surrogate pairs included.
    const names = ['x\uFFFD', 'x\uD83D\uDE00', 'x\uD83D\uDE01']
    for (const [i, name] of names.entries()) ((await store.open(name, 'gcounter')) as unknown as { increment(n: number): void }).increment(i + 1)
    await store.close()
    store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    for (const [i, name] of names.entries()) assert.equal((await store.open(name, 'gcounter')).value(), i + 1)
    assert.deepEqual((await store.names()).map((n) => n.name).sort(), [...names].sort())
    await store.close()
  } finally {
    await remove()
  }
})

it('a peer refuses them too', async () => {
  const peer = await createPeer({ agentId: 'p' })
  try {
    for (const name of LONE) {
      await assert.rejects(peer.set(name), invalid)
      await assert.rejects(peer.yjs(name), invalid)
    }
  } finally {
    await peer.close()
  }
})

it('the wire encodes no such name (CONCORD_INVALID_ARGUMENT) and decodes none (invalid UTF-8 is a decode error)', () => {
  for (const name of LONE) {
    assert.throws(() => encodeMessage({ type: 'delta', seq: 1, entry: { name, replicaType: 'orset', delta: new Uint8Array([1]) } }), invalid)
    assert.throws(() => encodeMessage({ type: 'versions', entries: [{ name, replicaType: 'orset', version: new Uint8Array([1]) }] }), invalid)
  }
  // A frame that carries 'x' + U+D800 as CESU-8 (ED A0 80), which a lenient encoder would write.
  const good = encodeMessage({ type: 'delta', seq: 1, entry: { name: 'x\uFFFD', replicaType: 'orset', delta: new Uint8Array([1]) } })
  const at = Buffer.from(good).indexOf(Buffer.from('x\uFFFD'))
  assert.ok(at > 0)
  const bad = Uint8Array.from(good)
  bad.set([0xed, 0xa0, 0x80], at + 1)
  assert.throws(
    () => decodeMessage(bad),
    (e) => isConcordError(e, 'CONCORD_DECODE_ERROR'),
  )
  assert.equal((decodeMessage(good) as { entry: { name: string } }).entry.name, 'x\uFFFD')
})
