import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createPeer, type Peer } from '../../peer/index.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { until } from '../helpers/wait.ts'

test('disconnect(url) cuts a dialed link (a partition); connect(url) heals it and both sides resync', async () => {
  const peers: Peer[] = []
  try {
    const a = await createPeer({ agentId: 'a' })
    peers.push(a)
    const b = await createPeer({ agentId: 'b' })
    peers.push(b)
    const { url } = await a.listen()
    await b.connect(url)
    const ca = await a.counter('c')
    const cb = await b.counter('c')
    ca.increment(1)
    await until(() => cb.value() === 1, 'first write reaches b')

    assert.equal(b.disconnect(url), 1)
    await until(() => a.connectedPeers.length === 0 && b.connectedPeers.length === 0, 'both sides see the link cut')
    ca.increment(10)
    cb.increment(100)
    // no reconnection happens while partitioned: b stopped dialing
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.deepEqual(b.connectedPeers, [])
    assert.equal(ca.value(), 11)
    assert.equal(cb.value(), 101)

    assert.equal(b.disconnect(url), 0, 'nothing left to cut')
    await b.connect(url)
    await until(() => ca.value() === 111 && cb.value() === 111, 'heal: both sides converge')
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
})

test('disconnect(url) rejects a connect() still waiting for its first handshake', async () => {
  const peer = await createPeer({ agentId: 'lonely' })
  try {
    // nothing listens on port 9 (discard): the reconnector keeps retrying
    const pending = peer.connect('ws://127.0.0.1:9/concord')
    assert.equal(peer.disconnect('ws://127.0.0.1:9/concord'), 1)
    await assert.rejects(pending, (e) => isConcordError(e, ErrorCodes.ABORTED))
  } finally {
    await peer.close()
  }
})
