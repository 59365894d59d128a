import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { AutomergeReplica } from '../../crdt/documents/index.ts'
import { decodeMessage, type DecodedMessage } from '../../sync/messages.ts'
import { Network } from '../../transports/memory/index.ts'
import { mutate } from './helpers/memory-host.ts'
import { SimPeer, connectPair } from './helpers/sim.ts'

/** Every frame b receives on its sessions, decoded. */
function tap(peer: SimPeer): DecodedMessage[] {
  const seen: DecodedMessage[] = []
  peer.transport.events.on('connection', (connection) => {
    connection.events.on('message', (frame) => {
      try {
        seen.push(decodeMessage(frame))
      } catch {
        /* chunks of nothing here */
      }
    })
  })
  return seen
}

test('sync: an anti-entropy answer of several names travels as one transaction (applied all or none)', async () => {
  const network = new Network({ seed: 21 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b')
  await b.listen()
  const received = tap(b)
  a.host.transact(() => {
    mutate(a.host.open('tasks', 'pncounter'), network.random, 't1')
    mutate(a.host.open('seen', 'orset'), network.random, 's1')
    mutate(a.host.open('doc', 'yjs'), network.random, 'd1')
  })
  await connectPair(network, a, b)
  assert.deepEqual(b.host.values(), a.host.values())
  const commits = received.filter((m) => m.type === 'delta' || m.type === 'transaction')
  assert.equal(commits.length, 1, `one commit carried the answer: ${commits.map((m) => m.type).join(', ')}`)
  assert.equal(commits[0].type, 'transaction')
  assert.deepEqual(commits[0].type === 'transaction' && commits[0].entries.map((e) => e.name).sort(), ['doc', 'seen', 'tasks'])
  assert.equal(b.host.applied, 1, 'applied in one applyRemote call')
})

test('sync: a bundle refused for one name (read-only there) is sent again without it', async () => {
  const network = new Network({ seed: 22 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b', { access: (peer, name) => (peer === 'a' && name.startsWith('ro/') ? 'read' : 'write') })
  await b.listen()
  // b and a share ro/plan; a then changes it while offline (a write b refuses) and writes rw/notes
  b.host.open('ro/plan', 'automerge')
  mutate(b.host.replicas.get('ro/plan')!, network.random, 'b0')
  const first = await connectPair(network, a, b)
  first.ab.close('offline')
  await network.run()
  ;(a.host.replicas.get('ro/plan') as AutomergeReplica<Record<string, unknown>>).change((d) => {
    d.evil = 'evil'
  })
  mutate(a.host.open('rw/notes', 'yjs'), network.random, 'fine')
  mutate(a.host.open('rw/count', 'pncounter'), network.random, 'fine')
  const bPlan = JSON.stringify(b.host.values()['ro/plan'])
  const { ab } = await connectPair(network, a, b)
  const rejected: string[] = []
  ab.events.on('rejected', (r) => rejected.push(r.name))
  await network.run()
  assert.equal(JSON.stringify(b.host.values()['ro/plan']), bPlan, 'the read-only name was not written')
  assert.deepEqual(b.host.values()['rw/notes'], a.host.values()['rw/notes'], 'the other names of the bundle arrived')
  assert.deepEqual(b.host.values()['rw/count'], a.host.values()['rw/count'])
  assert.ok(ab.stats.rejectedByRemote >= 1)
  assert.equal(ab.ackedSeq, ab.sentSeq, 'everything sent was processed')
})
