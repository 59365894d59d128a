import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as Y from 'yjs'
import { Encoder } from '../../crdt/codec.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { AutomergeReplica, YjsReplica } from '../../crdt/documents/index.ts'
import { encodeMessage, type DecodedMessage, decodeMessage } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection } from '../../transports/transport.ts'
import { ALL_TYPES, mutate } from './helpers/memory-host.ts'
import { SimPeer, connectPair } from './helpers/sim.ts'

function fill(peer: SimPeer, names: string[], ops: number, seedTag: string): void {
  names.forEach((name, i) => {
    const replica = peer.host.open(name, ALL_TYPES[i % ALL_TYPES.length])
    for (let k = 0; k < ops; k++) mutate(replica, peer.network.random, `${seedTag}${k}`)
  })
}

test('sync: handshake, anti-entropy both ways, then live deltas, with every type', async () => {
  const network = new Network({ seed: 1 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b')
  await b.listen()
  fill(
    a,
    ALL_TYPES.map((t) => `a-${t}`),
    3,
    'a',
  )
  fill(
    b,
    ALL_TYPES.map((t) => `b-${t}`),
    3,
    'b',
  )
  // a name both hold, with different histories
  fill(a, ['shared'], 2, 'x')
  fill(b, ['shared'], 2, 'y')
  const events: string[] = []
  const { ab, ba } = await connectPair(network, a, b)
  ab.events.on('synced', () => events.push('a synced'))
  assert.equal(ab.state, 'open')
  assert.equal(ba.state, 'open')
  assert.equal(ab.remoteAgentId, 'b')
  assert.equal(ba.remoteAgentId, 'a')
  assert.deepEqual(a.host.values(), b.host.values())
  assert.equal(a.host.replicas.size, ALL_TYPES.length * 2 + 1)

  // live: each single change travels as one commit, both ways
  const before = ba.stats.commitsIn
  for (const type of ALL_TYPES) mutate(a.host.replicas.get(`b-${type}`)!, network.random, 'live')
  await network.run()
  assert.equal(ba.stats.commitsIn - before, ALL_TYPES.length)
  assert.deepEqual(a.host.values(), b.host.values())
  // nothing is echoed back to where it came from
  assert.equal(ab.stats.commitsIn, ba.stats.commitsOut)
  assert.equal(ab.stats.malformed + ba.stats.malformed, 0)
})

test('sync: the second anti-entropy sends only what is missing', async () => {
  const network = new Network({ seed: 2 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b')
  await b.listen()
  const doc = a.host.open('doc', 'yjs') as YjsReplica
  for (let i = 0; i < 200; i++) doc.doc.getText('t').insert(0, `line ${i}\n`)
  const first = await connectPair(network, a, b)
  assert.deepEqual(a.host.values(), b.host.values())
  first.ab.close('offline')
  await network.run()
  // a edits offline a little
  doc.doc.getText('t').insert(0, 'one more line\n')
  const second = await connectPair(network, a, b)
  assert.deepEqual(a.host.values(), b.host.values())
  const full = first.ab.stats.bytesOut
  const resync = second.ab.stats.bytesOut
  assert.ok(resync < full / 5, `resync sent ${resync} bytes, the first sync ${full}`)
  assert.equal(second.ab.stats.commitsOut, 1)
})

test('sync: a commit relays through a middle peer and is not echoed back', async () => {
  const network = new Network({ seed: 3 })
  const peers = ['a', 'b', 'c', 'd', 'e'].map((n) => new SimPeer(network, n))
  for (const p of peers) await p.listen()
  const links = []
  for (let i = 0; i + 1 < peers.length; i++) links.push(await connectPair(network, peers[i], peers[i + 1]))
  const counter = peers[0].host.open('tasks', 'gcounter')
  mutate(counter, network.random, 'x')
  peers[0].host.transact(() => {
    mutate(peers[0].host.open('doc', 'yjs'), network.random, 'y')
    mutate(peers[0].host.open('spec', 'automerge'), network.random, 'z')
  })
  await network.run()
  for (const p of peers) assert.deepEqual(p.host.values(), peers[0].host.values())
  // the transaction travelled as one commit at every hop
  for (const { ba } of links) assert.equal(ba.stats.commitsIn, 2)
  // and nobody sent anything back towards a
  for (const { ab } of links) assert.equal(ab.stats.commitsIn, 0)
})

test('sync: incompatible protocol versions are refused with a clear reason, before any data', async () => {
  const network = new Network({ seed: 4 })
  const a = new SimPeer(network, 'a', {}, { versions: { min: 3, max: 4 } })
  const b = new SimPeer(network, 'b')
  await b.listen()
  fill(a, ['x'], 2, 'a')
  fill(b, ['y'], 2, 'b')
  const refusals: string[] = []
  b.transport.events.on('connection', () =>
    queueMicrotask(() => {
      b.history.at(-1)!.events.on('refused', (r) => refusals.push(`b:${r.by}:${r.reason}:${r.message}`))
    }),
  )
  const { ab, ba } = await connectPair(network, a, b)
  assert.equal(ab.state, 'closed')
  assert.equal(ba.state, 'closed')
  assert.ok(
    refusals.some((r) => r.startsWith('b:local:version:incompatible protocol versions: remote speaks 3..4, this peer 1..2')),
    refusals.join(),
  )
  assert.deepEqual([...a.host.replicas.keys()], ['x'])
  assert.deepEqual([...b.host.replicas.keys()], ['y'])
})

test('sync: wrong credentials are refused before any data flows, both directions', async () => {
  const network = new Network({ seed: 5 })
  const a = new SimPeer(network, 'a', {}, { token: 'wrong' })
  const b = new SimPeer(network, 'b', { token: 'secret' }, { token: 'b-token' })
  await b.listen()
  fill(a, ['x'], 2, 'a')
  fill(b, ['y'], 2, 'b')
  const { ab, ba } = await connectPair(network, a, b)
  const remote: string[] = []
  assert.equal(ab.state, 'closed')
  assert.equal(ba.state, 'closed')
  assert.equal(ab.stats.commitsIn + ab.stats.commitsOut + ba.stats.commitsIn + ba.stats.commitsOut, 0)
  assert.deepEqual([...a.host.replicas.keys()], ['x'])
  assert.deepEqual([...b.host.replicas.keys()], ['y'])
  void remote
  // the right token works
  const good = new SimPeer(network, 'good', {}, { token: 'secret' })
  fill(good, ['z'], 1, 'g')
  const ok = await connectPair(network, good, b)
  assert.equal(ok.ab.state, 'open')
  assert.deepEqual(good.host.values(), b.host.values())
})

test('sync: a read-only peer receives updates, its writes are refused and never applied', async () => {
  const network = new Network({ seed: 6 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b', { access: (peer, name) => (peer === 'a' && name.startsWith('ro/') ? 'read' : 'write') })
  await b.listen()
  b.host.open('ro/plan', 'automerge')
  mutate(b.host.replicas.get('ro/plan')!, network.random, 'b0')
  const { ab, ba } = await connectPair(network, a, b)
  assert.deepEqual(a.host.values(), b.host.values())
  const rejected: string[] = []
  ab.events.on('rejected', (r) => rejected.push(`${r.name}:${r.code}`))
  const bValue = JSON.stringify(b.host.values())
  ;(a.host.replicas.get('ro/plan') as AutomergeReplica<Record<string, unknown>>).change((d) => {
    d.evil = 'evil'
  })
  await network.run()
  assert.equal(JSON.stringify(b.host.values()), bValue)
  assert.deepEqual(rejected, ['ro/plan:CONCORD_FORBIDDEN'])
  assert.equal(ba.stats.refusedWrites, 1)
  // its writes to names it may write still go through, and acks still advance
  mutate(a.host.open('rw/notes', 'yjs'), network.random, 'fine')
  await network.run()
  assert.deepEqual(b.host.values()['rw/notes'], a.host.values()['rw/notes'])
  assert.equal(ab.ackedSeq, ab.sentSeq)
  // and b's own changes still reach a
  ;(b.host.replicas.get('ro/plan') as AutomergeReplica<Record<string, unknown>>).change((d) => {
    d.update = 'update'
  })
  await network.run()
  const [aPlan, bPlan] = [JSON.stringify(a.host.values()['ro/plan']), JSON.stringify(b.host.values()['ro/plan'])]
  assert.ok(aPlan.includes('update') && aPlan.includes('evil'), aPlan)
  assert.ok(bPlan.includes('update') && !bPlan.includes('evil'), bPlan)
})

test('sync: a peer gets only the names it asked for (names and prefixes)', async () => {
  const network = new Network({ seed: 7 })
  const a = new SimPeer(network, 'a', {}, { filter: { names: ['exact'], prefixes: ['pub/'] } })
  const b = new SimPeer(network, 'b')
  await b.listen()
  fill(b, ['exact', 'exactly', 'pub/1', 'pub/2', 'private'], 1, 'b')
  fill(a, ['mine'], 1, 'a')
  await connectPair(network, a, b)
  assert.deepEqual([...a.host.replicas.keys()].sort(), ['exact', 'mine', 'pub/1', 'pub/2'])
  // b asked for everything
  assert.ok(b.host.replicas.has('mine'))
  mutate(b.host.replicas.get('private')!, network.random, 'p')
  mutate(b.host.replicas.get('pub/1')!, network.random, 'q')
  await network.run()
  assert.ok(!a.host.replicas.has('private'))
  assert.deepEqual(a.host.values()['pub/1'], b.host.values()['pub/1'])
})

test('sync: a name held as another type is never overwritten', async () => {
  const network = new Network({ seed: 8 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b')
  await b.listen()
  mutate(a.host.open('x', 'yjs'), network.random, 'a')
  mutate(b.host.open('x', 'automerge'), network.random, 'b')
  const { ab, ba } = await connectPair(network, a, b)
  assert.equal(a.host.typeOf('x'), 'yjs')
  assert.equal(b.host.typeOf('x'), 'automerge')
  const rejected: string[] = []
  ab.events.on('rejected', (r) => rejected.push(r.code))
  mutate(a.host.replicas.get('x')!, network.random, 'again')
  await network.run()
  assert.deepEqual(rejected, [ErrorCodes.TYPE_MISMATCH])
  assert.equal(ba.state, 'open')
})

test('sync: a state larger than the frame limit is chunked and reassembled', async () => {
  const network = new Network({ seed: 9 })
  const a = new SimPeer(network, 'a', {}, { maxFrameBytes: 4096 })
  const b = new SimPeer(network, 'b', {}, { maxFrameBytes: 4096 })
  await b.listen()
  const doc = a.host.open('big', 'yjs') as YjsReplica
  const text = 'x'.repeat(50_000) + Array.from({ length: 2000 }, (_, i) => `${i}`).join(',')
  doc.doc.getText('t').insert(0, text)
  let largest = 0
  network.transport('a') // frames a sends: observe through the session stats
  const { ab, ba } = await connectPair(network, a, b)
  assert.deepEqual(a.host.values(), b.host.values())
  assert.ok(ab.stats.chunksOut > 10, `chunks out: ${ab.stats.chunksOut}`)
  assert.equal(ba.stats.chunksIn, ab.stats.chunksOut)
  largest = Math.max(largest, ab.stats.bytesOut / ab.stats.framesOut)
  assert.ok(largest <= 4096)
})

/** A hand-driven remote end: a raw connection to `b`, for bad input. */
async function rawRemote(network: Network, _b: SimPeer, id = 'raw'): Promise<{ connection: Connection; received: DecodedMessage[] }> {
  const dialing = network.transport(id).dial('memory://b')
  await network.run()
  const connection = await dialing
  const received: DecodedMessage[] = []
  connection.events.on('message', (frame) => received.push(decodeMessage(frame)))
  return { connection, received }
}

function hello(id: string): Uint8Array {
  return encodeMessage({
    type: 'hello',
    minVersion: 1,
    maxVersion: 1,
    agentId: agentId(id),
    token: '',
    filter: {},
    maxFrameBytes: 1 << 20,
    window: 64,
    extensions: [],
  })
}

test('sync: malformed frames are dropped and counted; unknown types ignored; a peer that keeps at it is disconnected', async () => {
  const network = new Network({ seed: 10 })
  const b = new SimPeer(network, 'b', {}, { maxMalformed: 5 })
  await b.listen()
  fill(b, ['y'], 1, 'b')
  const { connection, received } = await rawRemote(network, b)
  const session = b.history[0]
  await connection.send(hello('raw'))
  await connection.send(encodeMessage({ type: 'hello-ok', version: 1 }))
  await network.run()
  assert.equal(session.state, 'open')
  await connection.send(new Encoder().writeUint8(1).writeUint8(200).writeString('from the future').finish())
  await connection.send(new Uint8Array([1, 5, 0xff])) // a truncated delta
  await connection.send(new Uint8Array([1]))
  await network.run()
  assert.equal(session.state, 'open')
  assert.equal(session.stats.unknown, 1)
  assert.equal(session.stats.malformed, 2)
  // a delta with bytes the replica cannot decode: refused, counted
  await connection.send(encodeMessage({ type: 'delta', seq: 1, entry: { name: 'y', replicaType: b.host.typeOf('y')!, delta: new Uint8Array([9, 9, 9]) } }))
  await network.run()
  assert.ok(received.some((m) => m.type === 'reject' && m.code === ErrorCodes.DECODE_ERROR))
  assert.equal(session.stats.malformed, 3)
  for (let i = 0; i < 5; i++) await connection.send(new Uint8Array([1, 6, 0x80]))
  await network.run()
  assert.equal(session.state, 'closed')
  assert.equal(connection.open, false)
  assert.ok(received.some((m) => m.type === 'refuse' && m.reason === 'protocol'))
})

test('sync: data before the handshake is never applied; a transaction with one bad entry applies nothing', async () => {
  const network = new Network({ seed: 11 })
  const b = new SimPeer(network, 'b')
  await b.listen()
  const source = new Y.Doc()
  source.getText('t').insert(0, 'hello')
  const good = Y.encodeStateAsUpdate(source)
  const early = await rawRemote(network, b, 'early')
  const session = b.history[0]
  await early.connection.send(encodeMessage({ type: 'delta', seq: 1, entry: { name: 'early', replicaType: 'yjs', delta: good } }))
  await network.run()
  assert.equal(b.host.replicas.size, 0)
  assert.equal(session.stats.unexpected, 1)
  // Nothing but a HELLO may come first: the connection is refused, the frame never decoded.
  assert.equal(session.state, 'closed')
  assert.equal(session.stats.handshakeViolations, 1)
  assert.ok(early.received.some((m) => m.type === 'refuse' && m.reason === 'protocol'))
  const { connection, received } = await rawRemote(network, b)
  await connection.send(hello('raw'))
  await connection.send(encodeMessage({ type: 'hello-ok', version: 1 }))
  await connection.send(
    encodeMessage({
      type: 'transaction',
      seq: 1,
      entries: [
        { name: 'good', replicaType: 'yjs', delta: good },
        { name: 'bad', replicaType: 'automerge', delta: new Uint8Array([1, 2, 3, 4]) },
      ],
    }),
  )
  await network.run()
  assert.equal(b.host.replicas.size, 0, 'nothing of the bad transaction was applied')
  assert.ok(received.some((m) => m.type === 'reject' && m.seq === 1))
  assert.ok(
    received.some((m) => m.type === 'ack' && m.seq === 1),
    'a refused commit still counts as processed',
  )
  await connection.send(
    encodeMessage({
      type: 'transaction',
      seq: 2,
      entries: [
        { name: 'good', replicaType: 'yjs', delta: good },
        { name: 'good2', replicaType: 'yjs', delta: good },
      ],
    }),
  )
  await network.run()
  assert.deepEqual([...b.host.replicas.keys()].sort(), ['good', 'good2'])
})

test('sync: whenAcked resolves once the remote persisted, and rejects when the connection drops first', async () => {
  const network = new Network({ seed: 12 })
  let release: (() => void) | undefined
  let hold = false
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b', {
    persist: () =>
      hold
        ? new Promise<void>((resolve) => {
            release = resolve
          })
        : Promise.resolve(),
  })
  await b.listen()
  mutate(a.host.open('early', 'yjs'), network.random, 'e')
  // asked before the handshake: waits for the initial answer to be persisted
  const dialing = a.dial(b)
  await network.run({ until: () => a.history.length > 0 })
  const ab = await dialing
  let early = false
  const earlyAck = ab.whenAcked().then(() => {
    early = true
  })
  hold = true
  await network.run()
  assert.equal(early, false)
  release!()
  await network.run()
  await earlyAck
  assert.ok(b.host.replicas.has('early'))
  mutate(a.host.open('n', 'gset'), network.random, '1')
  let done = false
  const acked = ab.whenAcked().then(() => {
    done = true
  })
  await network.run()
  assert.equal(done, false, 'not acknowledged while b has not persisted')
  release!()
  await network.run()
  await acked
  assert.equal(done, true)

  mutate(a.host.replicas.get('n')!, network.random, '2')
  const failed = ab.whenAcked().then(
    () => undefined,
    (e: unknown) => e,
  )
  await network.run()
  ab.close('gone')
  await network.run()
  assert.ok(isConcordError(await failed, ErrorCodes.CLOSED))
  const aborted = new AbortController()
  aborted.abort()
  await assert.rejects(ab.whenAcked({ signal: aborted.signal }), (e) => isConcordError(e, ErrorCodes.CLOSED) || isConcordError(e, ErrorCodes.ABORTED))
})

test('sync: flow control keeps at most `window` commits in flight; an overflowing queue turns into a resync', async () => {
  const network = new Network({ seed: 13 })
  const a = new SimPeer(network, 'a', {}, { maxQueuedCommits: 20 })
  const b = new SimPeer(network, 'b', { persist: () => new Promise((resolve) => network.timers.setTimeout(resolve, 5)) }, { window: 4 })
  await b.listen()
  const { ab, ba } = await connectPair(network, a, b)
  const set = a.host.open('s', 'gset')
  let worst = 0
  ab.events.on('ack', () => {
    worst = Math.max(worst, ab.sentSeq - ab.ackedSeq)
  })
  for (let i = 0; i < 100; i++) mutate(set, network.random, `v${i}`)
  let steps = 0
  await network.run({
    until: () => {
      worst = Math.max(worst, ab.sentSeq - ab.ackedSeq)
      return ++steps > 1e6
    },
  })
  assert.ok(worst <= 4, `in flight: ${worst}`)
  assert.ok(ab.stats.overflows >= 1)
  assert.ok(ba.stats.commitsIn < 100, `${ba.stats.commitsIn} commits instead of 100 deltas`)
  assert.deepEqual(a.host.values(), b.host.values())
})

test('sync: lag counts the commits (and their bytes) the remote has not acknowledged; lastAckAt moves with its acks', async () => {
  const network = new Network({ seed: 21 })
  let release: (() => void) | undefined
  let hold = false
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b', {
    persist: () =>
      hold
        ? new Promise<void>((resolve) => {
            release = resolve
          })
        : Promise.resolve(),
  })
  await b.listen()
  const { ab } = await connectPair(network, a, b)
  assert.deepEqual(ab.lag, { commits: 0, bytes: 0 })
  assert.equal(ab.lastAckAt, undefined, 'nothing of ours was acknowledged yet')
  mutate(a.host.open('n', 'gset'), network.random, '1')
  await network.run()
  const firstAck = ab.lastAckAt
  assert.ok(typeof firstAck === 'number')
  assert.deepEqual(ab.lag, { commits: 0, bytes: 0 })
  hold = true
  mutate(a.host.replicas.get('n')!, network.random, '2')
  await network.run()
  assert.equal(ab.lag.commits, 1, 'one commit sent, not acknowledged while b has not persisted it')
  assert.ok(ab.lag.bytes > 0)
  assert.equal(ab.lastAckAt, firstAck)
  hold = false
  release!()
  await network.run()
  assert.deepEqual(ab.lag, { commits: 0, bytes: 0 })
  assert.ok(ab.lastAckAt! >= firstAck!)
  assert.equal(ab.ackedSeq, ab.sentSeq)
})
