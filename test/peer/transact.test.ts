import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createPeer, type Peer } from '../../peer/index.ts'
import { until } from '../helpers/wait.ts'

test('a transaction that changes one name twice reaches every peer, through a relay, as one commit', async () => {
  const peers: Peer[] = []
  try {
    for (const id of ['a', 'relay', 'c']) peers.push(await createPeer({ id }))
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
      assert.equal(refusedWrites + rejectedByRemote, 0, `${peer.id}: nothing refused`)
    }
    // one commit per hop: a -> relay, relay -> c
    assert.equal(a.stats().totals.commitsOut, 1)
    assert.equal(c.stats().totals.commitsIn, 1)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
})
