/**
 * A name a peer may not read is invisible to it, on every path that sends
 * names, with real sockets on 127.0.0.1: over a WebSocket session it is not
 * listed in VERSIONS (on open, on REQUEST), not answered, not sent live,
 * and a refused write says nothing an absent name would not; over gossipsub
 * it is not published to a subscriber no session identified (on a peer
 * that requires credentials) and not relayed by a peer whose rules forbid
 * the next hop.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createReplica } from '../../crdt/registry.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { createPeer, gossipTopic, type Peer, type PeerOptions } from '../../peer/index.ts'
import type { DecodedMessage } from '../../sync/messages.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { FAST_REDIAL, startNode, type Node } from './helpers/libp2p-nodes.ts'
import { rawClient } from './helpers/raw-concord-client.ts'

/** Every name a message carries (what the receiver learns from it). */
function namesIn(message: DecodedMessage): string[] {
  switch (message.type) {
    case 'versions':
      return message.entries.map((entry) => entry.name)
    case 'delta':
      return [message.entry.name]
    case 'transaction':
      return message.entries.map((entry) => entry.name)
    case 'reject':
      return [message.name]
    default:
      return []
  }
}

test('over a WebSocket session, a name the peer may not read is never listed, versioned, answered or sent live; a refused write reveals nothing', async () => {
  const dir = await tempDir('concord-invisible-')
  const peers: Peer[] = []
  try {
    const server = await createPeer({
      agentId: 'server',
      dir: join(dir.path, 'server'),
      auth: { accept: { viewer: 'v', writer: 'w' } },
      access: (peer, name) => {
        if (name.startsWith('private/')) return peer === 'writer' ? 'write' : 'none'
        return peer === 'writer' ? 'write' : 'read'
      },
    })
    peers.push(server)
    ;(await server.register<string>('private/plan')).set('classified')
    ;(await server.counter('public/notes')).increment()
    await server.flush()
    const { url } = await server.listen()

    const viewer = await rawClient(url, true, { peer: 'viewer', token: 'v' })
    await until(() => viewer.received.some((m) => m.type === 'versions'), "the server's VERSIONS")
    const firstVersions = viewer.received.find((m) => m.type === 'versions')!
    assert.deepEqual(namesIn(firstVersions), ['public/notes'], 'VERSIONS lists only what the viewer may read')

    // our VERSIONS: empty, and then one that names the private register (as if we held it): answered without it
    const bogus = createReplica('lww-register', { agentId: agentId('viewer') }).version()
    await viewer.send({ type: 'versions', entries: [] })
    await viewer.send({ type: 'versions', entries: [{ name: 'private/plan', replicaType: 'lww-register', version: bogus }] })
    // a REQUEST: the server sends its VERSIONS again
    const versionsBefore = viewer.received.filter((m) => m.type === 'versions').length
    await viewer.send({ type: 'request' })
    await until(() => viewer.received.filter((m) => m.type === 'versions').length > versionsBefore, 'VERSIONS again on REQUEST')
    await until(() => viewer.received.some((m) => m.type === 'done'), 'the answers done (a VERSIONS supersedes the answer still queued)')

    // writes to a private name that exists and to one that does not: the same refusal
    const delta = (() => {
      const replica = createReplica('lww-register', { agentId: agentId('viewer') })
      let out: Uint8Array | undefined
      replica.events.on('change', (event) => {
        out = event.delta
      })
      ;(replica as unknown as { set(value: string): void }).set('tampered')
      return out!
    })()
    await viewer.send({ type: 'delta', seq: 1, entry: { name: 'private/plan', replicaType: 'lww-register', delta } })
    await viewer.send({ type: 'delta', seq: 2, entry: { name: 'private/absent', replicaType: 'lww-register', delta } })
    await viewer.send({ type: 'delta', seq: 3, entry: { name: 'private/plan', replicaType: 'pncounter', delta } })
    await until(() => viewer.received.filter((m) => m.type === 'reject').length === 3, 'three refusals')
    const rejects = viewer.received.filter((m) => m.type === 'reject') as Extract<DecodedMessage, { type: 'reject' }>[]
    assert.deepEqual(
      rejects.map((r) => r.code),
      ['CONCORD_FORBIDDEN', 'CONCORD_FORBIDDEN', 'CONCORD_FORBIDDEN'],
      'no type mismatch is revealed',
    )
    assert.equal(
      rejects[0].message.replace('private/plan', 'X'),
      rejects[1].message.replace('private/absent', 'X'),
      'an existing name is refused in the words of an absent one',
    )

    // live: a writer changes the private name, then a public one; only the public change reaches the viewer
    const writer = await createPeer({ agentId: 'writer', auth: { token: 'w' } })
    peers.push(writer)
    await writer.connect(url)
    await until(async () => (await writer.register<string>('private/plan')).value() === 'classified', 'the writer reads the private name')
    ;(await writer.register<string>('private/plan')).set('revised')
    await until(async () => (await server.register<string>('private/plan')).value() === 'revised', 'the private change reaches the server')
    const publicDeltas = () => viewer.received.filter((m) => m.type === 'delta' && m.entry.name === 'public/notes').length
    const deltasBefore = publicDeltas()
    ;(await writer.counter('public/notes')).increment()
    await until(() => publicDeltas() > deltasBefore, 'the public change reaches the viewer live (after the private one, had it been sent)')

    const sent = new Set(['private/plan', 'private/absent'])
    for (const message of viewer.received) {
      for (const name of namesIn(message)) {
        if (!name.startsWith('private/')) continue
        assert.ok(message.type === 'reject' && sent.has(name), `the viewer learned "${name}" from a ${message.type}`)
      }
    }
    assert.equal((await server.register<string>('private/plan')).value(), 'revised', 'the viewer wrote nothing')

    // a real peer with the viewer's credentials holds no private name after syncing
    const real = await createPeer({ agentId: 'viewer', auth: { token: 'v' } })
    peers.push(real)
    await real.connect(url)
    await until(async () => (await real.names()).some((n) => n.name === 'public/notes'), 'the real viewer syncs')
    assert.deepEqual(
      (await real.names()).map((n) => n.name),
      ['public/notes'],
    )
    viewer.ws.terminate()
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
})

const GOSSIP = { ...FAST_REDIAL, gossipsub: { heartbeatIntervalMs: 200, antiEntropyIntervalMs: 60_000 } } as const
const TOPIC = gossipTopic()

function gossipNode(id: string, libp2p: NonNullable<PeerOptions['libp2p']> = {}, extra: Partial<PeerOptions> = {}): Promise<Node> {
  return startNode(id, undefined, GOSSIP, libp2p, extra)
}

test('gossipsub: a relay does not forward a unit to a neighbour its rules forbid; the neighbour still gets what it may read', async () => {
  const nodes: Node[] = []
  try {
    const relay = await gossipNode(
      'relay',
      {},
      {
        auth: { accept: { origin: 'o-secret', far: 'f-secret' } },
        access: (peer, name) => (peer === 'far' && name.startsWith('secret/') ? 'none' : 'write'),
      },
    )
    nodes.push(relay)
    // origin and far require no credentials of their own (so far trusts a relayed unit's claimed publisher, as it may)
    const origin = await gossipNode('origin')
    nodes.push(origin)
    const far = await gossipNode('far')
    nodes.push(far)
    await origin.peer.connect(relay.address, { token: 'o-secret' })
    await far.peer.connect(relay.address, { token: 'f-secret' })
    const idOf = (n: Node) => n.peer.libp2p!.peerId
    await until(
      () =>
        new Set(relay.peer.connectedPeers).size === 2 &&
        relay.peer.libp2p!.pubsub.subscribers(TOPIC).length === 2 &&
        origin.peer.libp2p!.pubsub.subscribers(TOPIC).includes(idOf(relay)) &&
        far.peer.libp2p!.pubsub.subscribers(TOPIC).includes(idOf(relay)),
      'a line origin - relay - far with gossip subscriptions',
      20_000,
    )
    assert.ok(!origin.peer.libp2p!.connectedPeers().includes(idOf(far)), 'origin and far are not connected: only the relay links them')

    ;(await origin.peer.counter('secret/x')).increment(7)
    ;(await origin.peer.counter('public/y')).increment(3)
    await until(
      async () => (await relay.peer.counter('secret/x')).value() === 7 && (await relay.peer.counter('public/y')).value() === 3,
      'the relay applies both',
    )
    await until(async () => (await far.peer.names()).some((n) => n.name === 'public/y'), 'far gets the public unit')
    assert.equal((await far.peer.counter('public/y')).value(), 3)
    assert.ok(!(await far.peer.names()).some((n) => n.name.startsWith('secret/')), 'far never got the secret unit')
    assert.ok(relay.peer.stats().gossip!.kept >= 1, 'the relay kept a message back')
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
  }
})

test('gossipsub: a peer that requires credentials publishes nothing to a subscriber no session identified (one refused at the handshake)', async () => {
  const nodes: Node[] = []
  try {
    const guarded = await gossipNode('guarded', {}, { auth: { token: 'T' } })
    nodes.push(guarded)
    const member = await gossipNode('member', {}, { auth: { token: 'T' } })
    nodes.push(member)
    const intruder = await gossipNode('intruder')
    nodes.push(intruder)
    await member.peer.connect(guarded.address)
    await assert.rejects(intruder.peer.connect(guarded.address, { token: 'wrong' }), /refused/)
    const idOf = (n: Node) => n.peer.libp2p!.peerId
    await until(
      () => {
        const subscribers = guarded.peer.libp2p!.pubsub.subscribers(TOPIC)
        return subscribers.includes(idOf(member)) && subscribers.includes(idOf(intruder))
      },
      'the refused peer is still a libp2p neighbour subscribed to the topic',
      20_000,
    )

    ;(await guarded.peer.counter('payroll')).increment(100)
    await until(async () => (await member.peer.counter('payroll')).value() === 100, 'the member gets it (by its session)')
    assert.deepEqual(
      (await intruder.peer.names()).map((n) => n.name),
      [],
      'the intruder got nothing',
    )
    const stats = guarded.peer.stats().gossip!
    assert.equal(stats.published, 0, 'not published while an unidentified subscriber listens')
    assert.ok(stats.notPublished >= 1)
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
  }
})
