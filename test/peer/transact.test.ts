import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { createPeer, type Peer } from '../../peer/index.ts'
import { until } from '../helpers/wait.ts'

test('a transaction that changes one name twice reaches every peer, through a relay, as one commit', async () => {
  const peers: Peer[] = []
  try {
    for (const id of ['a', 'relay', 'c']) peers.push(await createPeer({ agentId: id }))
    const [a, relay, c] = peers
    const { url } = await relay.listen()
    await a.connect(url)
    await c.connect(url)
    const counter = await a.counter('count')
    const log = await a.set<string>('log')
    await a.transact(() => {
      counter.increment()
      log.add('one')
      counter.increment(2)
      log.add('two')
    })
    const far = await c.counter('count')
    const farLog = await c.set<string>('log')
    await until(() => far.value() === 3 && farLog.size === 2, 'the transaction reaches c through the relay')
    for (const peer of peers) {
      const { refusedWrites, rejectedByRemote } = peer.stats().totals
      assert.equal(refusedWrites + rejectedByRemote, 0, `${peer.agentId}: nothing refused`)
    }
    // one commit per hop: a -> relay, relay -> c
    assert.equal(a.stats().totals.commitsOut, 1)
    assert.equal(c.stats().totals.commitsIn, 1)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
})

test('a transaction that throws changes nothing: not here, not in the log, not on a connected peer', async () => {
  const peers: Peer[] = []
  try {
    for (const id of ['a', 'b']) peers.push(await createPeer({ agentId: id }))
    const [a, b] = peers
    const { url } = await b.listen()
    await a.connect(url)
    const counter = await a.counter('count')
    const tags = await a.set<string>('tags')
    const doc = await a.yjs('doc')
    const spec = await a.automerge<{ step?: number }>('spec')
    await a.transact(() => {
      counter.increment()
      tags.add('kept')
      doc.doc.getText('t').insert(0, 'kept')
      spec.change((d) => {
        d.step = 1
      })
    })
    await a.flush({ acks: 1 })
    const commitsBefore = a.stats().totals.commitsOut
    const historyBefore = (await a.history('tags')).length
    await assert.rejects(
      a.transact(() => {
        counter.increment(5)
        tags.add('refused')
        tags.delete('kept')
        doc.doc.getText('t').insert(4, ' refused')
        spec.change((d) => {
          d.step = 2
        })
        throw new Error('the block failed')
      }),
      /the block failed/,
    )
    assert.equal(counter.value(), 1)
    assert.deepEqual(tags.values(), ['kept'])
    assert.equal(doc.doc.getText('t').toString(), 'kept')
    assert.deepEqual(spec.value(), { step: 1 })
    await a.flush({ acks: 1 })
    assert.equal(a.stats().totals.commitsOut, commitsBefore, 'nothing sent')
    assert.equal((await a.history('tags')).length, historyBefore, 'nothing logged')
    const far = await b.set<string>('tags')
    const farCount = await b.counter('count')
    const farDoc = await b.yjs('doc')
    assert.deepEqual(far.values(), ['kept'])
    assert.equal(farCount.value(), 1)
    assert.equal(farDoc.doc.getText('t').toString(), 'kept')
    // The next transaction goes through as usual, the compensated Yjs structs with it.
    await a.transact(() => {
      tags.add('next')
      doc.doc.getText('t').insert(4, '!')
    })
    await until(() => far.size === 2 && farDoc.doc.getText('t').toString() === 'kept!', 'the next transaction reaches b')
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
})

test("after close, a peer's replicas refuse changes with CONCORD_CLOSED", async () => {
  const peer = await createPeer({ agentId: 'closing' })
  const counter = await peer.counter('count')
  const map = await peer.map('facts')
  counter.increment()
  map.set('owner', 'ana')
  await peer.close()
  assert.throws(
    () => counter.increment(),
    (e) => isConcordError(e, 'CONCORD_CLOSED'),
  )
  assert.throws(
    () => map.set('owner', 'bo'),
    (e) => isConcordError(e, 'CONCORD_CLOSED'),
  )
  assert.throws(
    () => map.counter('visits').increment(),
    (e) => isConcordError(e, 'CONCORD_CLOSED'),
  )
  assert.equal(counter.value(), 1)
  assert.deepEqual(map.value(), { owner: 'ana' })
})

test('a change made for another agent (a door serving its clients) is logged under that agent with its message and meta, as is a revert; bad provenance is refused before anything changes', async () => {
  const peer = await createPeer({ agentId: 'hub' })
  try {
    const counter = await peer.counter('count')
    await peer.transact(() => counter.increment(2), { agent: 'ana', message: 'two for the plan', meta: { tool: 'counter_add' } })
    counter.increment()
    await peer.flush()
    assert.equal(await peer.revert('count', 1, { agent: 'bo', message: 'back to two' }), 3)
    const history = await peer.history('count')
    assert.deepEqual(
      history.map((entry) => [entry.agent, entry.message, entry.meta]),
      [
        ['ana', 'two for the plan', { tool: 'counter_add' }],
        ['hub', undefined, undefined],
        ['bo', 'back to two', undefined],
      ],
    )
    assert.equal(counter.value(), 2)
    for (const options of [
      { agent: '' },
      { agent: 'x'.repeat(257) },
      { message: 'm'.repeat(4097) },
      { meta: [] },
      { meta: { big: 'x'.repeat(17_000) } },
      { meta: { f: () => 1 } },
    ]) {
      await assert.rejects(
        peer.transact(() => counter.increment(), options as never),
        (error) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT),
        JSON.stringify(Object.keys(options)),
      )
    }
    assert.equal(counter.value(), 2, 'a refused transaction changed nothing')
    assert.equal(peer.store.settledSeq('count'), 3, 'the replica is exactly at its last record')
    counter.increment()
    assert.equal(peer.store.settledSeq('count'), undefined, 'a change waits to be logged')
    await peer.flush()
    assert.equal(peer.store.settledSeq('count'), 4)
  } finally {
    await peer.close()
  }
})
