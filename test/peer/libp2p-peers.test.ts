/**
 * createPeer() over libp2p through the peer API (`listen({ libp2p })`,
 * `connect(multiaddr)`), real libp2p nodes on 127.0.0.1 with LevelDB
 * folders: five peers converge on every type; one stops, the others keep
 * writing, it restarts from its folder (same PeerId, same port) and catches
 * up; a node outside the allowlist gets nothing; a partition into two groups
 * heals and converges; credentials refused for good are not redialled.
 * Every peer is closed at the end.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { multiaddr } from '@multiformats/multiaddr'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { FAST_REDIAL, startNode as startLibp2pNode, untilConverged as untilNodesConverged, type Node } from './helpers/libp2p-nodes.ts'
import { loadOrCreatePrivateKey } from '../../transports/libp2p/index.ts'
import { until } from '../helpers/wait.ts'
import { tempDir } from '../helpers/temp-dir.ts'

function startNode(id: string, dir: string | undefined, libp2p: NonNullable<PeerOptions['libp2p']> = {}, extra: Partial<PeerOptions> = {}): Promise<Node> {
  return startLibp2pNode(id, dir, FAST_REDIAL, libp2p, extra)
}

/** The PeerId a folder's key file gives (created now if missing). */
async function peerIdOfDir(dir: string): Promise<string> {
  return peerIdFromPrivateKey(await loadOrCreatePrivateKey(dir)).toString()
}

async function writeEverything(peer: Peer, i: number, tag: string): Promise<void> {
  ;(await peer.counter('tasks')).increment(i + 1)
  ;(await peer.set<string>('seen')).add(`${tag}-${i}`)
  ;(await peer.mvRegister<string>('mood')).set(`${tag}-${i}`)
  ;(await peer.gset<string>('log')).add(`${tag}-${i}`)
  ;(await peer.map('facts')).set(`${tag}${i}`, i)
  ;(await peer.yjs('ctx')).doc.getText('t').insert(0, `${i}`)
  ;(await peer.automerge<{ items?: string[] }>('spec')).change((doc) => {
    doc.items = [...(doc.items ?? []), `${tag}-${i}`]
  })
  if (i === 2) {
    ;(await peer.register<{ step: number }>('plan')).set({ step: 7 })
    ;(await peer.flag('ready')).enable()
  }
}

function untilConverged(nodes: Node[], what: string): Promise<void> {
  return untilNodesConverged(nodes, what, (n) => {
    const t = n.peer.libp2p
    return `libp2p ${t?.connectedPeers().length} sessions ${n.peer.connectedPeers.length} ${JSON.stringify(t?.stats)}`
  })
}

test('five peers over libp2p (listen/bootstrap/connect) converge on every type; a stopped peer restarts from its folder and catches up', async () => {
  const dir = await tempDir('concord-libp2p-peers-')
  const nodes: Node[] = []
  try {
    for (let i = 0; i < 5; i++) {
      // agents 0-3 find each other through bootstrap lists, agent 4 through connect()
      const bootstrap = i < 4 ? nodes.map((n) => n.address) : []
      nodes.push(await startNode(`agent-${i}`, join(dir.path, `agent-${i}`), { bootstrap }))
    }
    for (let i = 0; i < 4; i++) await nodes[4].peer.connect(nodes[i].address)
    await until(() => nodes.every((n) => new Set(n.peer.connectedPeers).size === 4), 'every peer has a session with the four others', 20_000)

    for (const [i, node] of nodes.entries()) await writeEverything(node.peer, i, 'first')
    await untilConverged(nodes, 'five peers converge')
    assert.equal((await nodes[0].peer.counter('tasks')).value(), 15)
    assert.equal((await nodes[4].peer.set<string>('seen')).size, 5)
    assert.deepEqual((await nodes[1].peer.register<{ step: number }>('plan')).value(), { step: 7 })
    assert.equal((await nodes[3].peer.flag('ready')).value(), true)

    // stop agent-3; the others keep writing
    const stopped = nodes[3]
    const stoppedId = stopped.peer.libp2p!.peerId
    const port = multiaddr(stopped.address).decapsulateCode(421).toString()
    await stopped.peer.close()
    assert.equal(stopped.peer.libp2p!.libp2p?.status, 'stopped', 'close() stops the libp2p node')
    const alive = nodes.filter((n) => n !== stopped)
    for (const [i, node] of alive.entries()) {
      ;(await node.peer.counter('tasks')).increment(10)
      ;(await node.peer.set<string>('seen')).add(`while-away-${i}`)
      ;(await node.peer.yjs('ctx')).doc.getText('t').insert(0, 'w')
    }
    await untilConverged(alive, 'the four converge while agent-3 is away')

    // restart from the same folder and port, with no bootstrap: the others' redial brings it back
    const back = await startNode('agent-3', join(dir.path, 'agent-3'), { addresses: [port] })
    nodes[3] = back
    assert.equal(back.peer.libp2p!.peerId, stoppedId, 'same PeerId from the key file in the folder')
    await untilConverged(nodes, 'agent-3 catches up after the redial')
    assert.equal((await back.peer.counter('tasks')).value(), 15 + 40)
    assert.ok((await back.peer.set<string>('seen')).has('while-away-0'))
    assert.ok(
      alive.some((n) => n.peer.libp2p!.stats.redialed > 0),
      'agent-3 came back through a redial',
    )
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
    await dir.remove()
  }
})

test('allowlist: a node outside it is refused and no data reaches it; listed peers sync', async () => {
  const dir = await tempDir('concord-libp2p-allow-')
  const nodes: Node[] = []
  try {
    const dirs = ['a', 'b', 'mallory'].map((name) => join(dir.path, name))
    const [idA, idB] = await Promise.all(dirs.slice(0, 2).map(peerIdOfDir))
    const a = await startNode('a', dirs[0], { allow: [idB] })
    nodes.push(a)
    const b = await startNode('b', dirs[1], { allow: [idA], bootstrap: [a.address] })
    nodes.push(b)
    const mallory = await startNode('mallory', dirs[2], { bootstrap: [a.address, b.address] })
    nodes.push(mallory)
    ;(await a.peer.set<string>('secrets')).add('launch-code')
    await until(async () => (await b.peer.set<string>('secrets')).has('launch-code'), 'b (listed) gets the data')

    await assert.rejects(
      mallory.peer.connect(a.address),
      (error: unknown) => isConcordError(error) && (error.code === ErrorCodes.UNREACHABLE || error.code === ErrorCodes.FORBIDDEN),
    )
    await assert.rejects(a.peer.connect(mallory.address), (error: unknown) => isConcordError(error, ErrorCodes.FORBIDDEN))
    await until(() => a.peer.libp2p!.stats.denied > 0 && b.peer.libp2p!.stats.denied > 0, 'both listed peers refused mallory')
    assert.deepEqual(mallory.peer.connectedPeers, [])
    assert.deepEqual(await mallory.peer.names(), [], 'nothing reached mallory')
    assert.equal(mallory.peer.stats().totals.bytesIn, 0)
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
    await dir.remove()
  }
})

test('partition of five peers into two groups (libp2p block): both sides write, each side converges alone, the healed mesh converges', async () => {
  const nodes: Node[] = []
  try {
    for (let i = 0; i < 5; i++) nodes.push(await startNode(`p-${i}`, undefined, { bootstrap: nodes.map((n) => n.address) }))
    await until(() => nodes.every((n) => new Set(n.peer.connectedPeers).size === 4), 'full mesh', 20_000)
    const left = nodes.slice(0, 2)
    const right = nodes.slice(2)
    const idOf = (n: Node) => n.peer.libp2p!.peerId
    const cut = async () => {
      for (const l of left) for (const r of right) await Promise.all([l.peer.libp2p!.block(idOf(r)), r.peer.libp2p!.block(idOf(l))])
    }
    await cut()
    await until(
      () => left.every((n) => new Set(n.peer.connectedPeers).size === 1) && right.every((n) => new Set(n.peer.connectedPeers).size === 2),
      'partitioned',
    )

    for (const [i, node] of nodes.entries()) await writeEverything(node.peer, i, i < 2 ? 'left' : 'right')
    await untilConverged(left, 'the left group converges')
    await untilConverged(right, 'the right group converges')
    assert.equal((await left[0].peer.counter('tasks')).value(), 1 + 2, 'no write crossed the partition')
    assert.equal((await right[0].peer.counter('tasks')).value(), 3 + 4 + 5)

    for (const l of left)
      for (const r of right) {
        l.peer.libp2p!.unblock(idOf(r))
        r.peer.libp2p!.unblock(idOf(l))
      }
    await untilConverged(nodes, 'the healed mesh converges')
    assert.equal((await nodes[0].peer.counter('tasks')).value(), 15)
    assert.equal((await nodes[4].peer.set<string>('seen')).size, 5)
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
  }
})

test('peer API: options checked; credentials refused for good reject connect and are not redialled; in-memory peers get an ephemeral key', async () => {
  const server = await startNode('server', undefined, {}, { auth: { token: 'right' } })
  const other = await createPeer({ agentId: 'other' })
  const client = await createPeer({ agentId: 'client', auth: { token: 'wrong' }, libp2p: FAST_REDIAL })
  try {
    await assert.rejects(other.listen({ libp2p: {}, port: 1 } as never), (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(other.listen({ libp2p: { bootstrap: ['not-a-multiaddr'] } }), (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(createPeer({ agentId: 'x', libp2p: { gossipsub: { group: 'a b' } } }), (error: unknown) =>
      isConcordError(error, ErrorCodes.INVALID_ARGUMENT),
    )
    await assert.rejects(other.connect('/ip4/127.0.0.1/tcp/1/p2p/not-a-peer-id'), (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT))
    const { peerId } = await other.listen({ libp2p: {} })
    assert.notEqual(peerId, server.peer.libp2p!.peerId, 'two in-memory peers, two keys')
    await assert.rejects(other.listen({ libp2p: { gossipsub: true } }), (error: unknown) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT))

    let refusals = 0
    server.peer.events.on('refused', () => {
      refusals++
    })
    await assert.rejects(client.connect(server.address), (error: unknown) => isConcordError(error, ErrorCodes.AUTH_FAILED))
    // forgotten on both sides: with a 100 ms backoff a redial would have come many times over
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    assert.equal(refusals, 1, 'one handshake refused, no redial')
    assert.equal(client.libp2p!.stats.redialed + client.libp2p!.stats.discoveryDials, 0)

    // the right token connects; then disconnect() by multiaddr closes the session
    await client.connect(server.address, { token: 'right' })
    assert.deepEqual([...new Set(client.connectedPeers)], ['server'])
    assert.ok(client.disconnect(server.address) >= 1)
  } finally {
    await Promise.all([server.peer.close(), other.close(), client.close()])
  }
})
