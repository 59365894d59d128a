/**
 * createPeer() over libp2p with the gossipsub fan-out (`gossipsub: true`),
 * real nodes on 127.0.0.1: five peers converge on every type with live
 * deltas going by gossip and not again over the sessions; flush({ acks })
 * still means "persisted by n peers"; a stopped peer catches up through the
 * sessions' anti-entropy; bad gossip (garbage, a forged sender, a write the
 * sender may not make, an undecodable delta) is counted and dropped, never
 * applied. Every peer is closed at the end.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { encodeGossipMessage, gossipTopic, type PeerOptions } from '../../peer/index.ts'
import { FAST_REDIAL, startNode as startLibp2pNode, untilConverged as untilNodesConverged, type Node } from './helpers/libp2p-nodes.ts'
import { until } from '../helpers/wait.ts'
import { tempDir } from '../helpers/temp-dir.ts'

const TOPIC = gossipTopic()

/** Gossip nodes: fast redials and heartbeats, no periodic anti-entropy unless a test asks. */
const GOSSIP = { ...FAST_REDIAL, gossipsub: { heartbeatIntervalMs: 200, antiEntropyIntervalMs: 60_000 } } as const

function startNode(id: string, dir: string | undefined, libp2p: NonNullable<PeerOptions['libp2p']> = {}, extra: Partial<PeerOptions> = {}): Promise<Node> {
  return startLibp2pNode(id, dir, GOSSIP, libp2p, extra)
}

async function startMesh(count: number, dir?: string): Promise<Node[]> {
  const nodes: Node[] = []
  for (let i = 0; i < count; i++) {
    nodes.push(await startNode(`g-${i}`, dir && join(dir, `g-${i}`), { bootstrap: nodes.map((n) => n.address) }))
  }
  return nodes
}

/** Every peer has a session with every other and sees every other subscribed to the live topic. */
function meshReady(nodes: Node[]): boolean {
  return nodes.every((n) => new Set(n.peer.connectedPeers).size === nodes.length - 1 && n.peer.libp2p!.pubsub.subscribers(TOPIC).length === nodes.length - 1)
}

function untilConverged(nodes: Node[], what: string): Promise<void> {
  return untilNodesConverged(nodes, what, (n) => JSON.stringify(n.peer.stats().gossip))
}

test('gossipsub: five peers converge on every type; live deltas go by gossip and not again over the sessions; flush({ acks }) holds; a stopped peer catches up', async () => {
  const dir = await tempDir('concord-libp2p-gossip-')
  let nodes: Node[] = []
  try {
    nodes = await startMesh(5, dir.path)
    await until(() => meshReady(nodes), 'full mesh with gossip subscriptions', 20_000)

    for (const [i, { peer }] of nodes.entries()) {
      ;(await peer.counter('tasks')).increment(i + 1)
      ;(await peer.set<string>('seen')).add(`url-${i}`)
      ;(await peer.mvRegister<string>('mood')).set(`m-${i}`)
      ;(await peer.gset<string>('log')).add(`l-${i}`)
      ;(await peer.map('facts')).set(`k${i}`, i)
      ;(await peer.yjs('ctx')).doc.getText('t').insert(0, `${i}`)
      ;(await peer.automerge<{ items?: string[] }>('spec')).change((doc) => {
        doc.items = [...(doc.items ?? []), `item-${i}`]
      })
    }
    ;(await nodes[2].peer.register<{ step: number }>('plan')).set({ step: 7 })
    ;(await nodes[3].peer.flag('ready')).enable()
    await untilConverged(nodes, 'five peers converge over gossip')
    assert.equal((await nodes[0].peer.counter('tasks')).value(), 15)

    // a burst from one writer: every unit published once, applied by the four others, and skipped by the writer's sessions
    const writer = nodes[0].peer
    const before = { out: writer.stats().totals.commitsOut, gossip: writer.stats().gossip! }
    const counter = await writer.counter('burst')
    for (let i = 0; i < 20; i++) {
      counter.increment()
      await writer.flush()
    }
    await until(async () => (await Promise.all(nodes.map(async (n) => (await n.peer.counter('burst')).value()))).every((v) => v === 20), 'burst everywhere')
    const after = { out: writer.stats().totals.commitsOut, gossip: writer.stats().gossip! }
    assert.ok(after.gossip.published - before.gossip.published >= 1, 'published on gossip')
    assert.ok(
      after.gossip.skipped - before.gossip.skipped >= 4 * (after.gossip.published - before.gossip.published),
      'each of the four sessions skipped what gossip carried',
    )
    assert.ok(
      after.out - before.out < after.gossip.published - before.gossip.published,
      `sessions did not send the deltas again (${after.out - before.out} commits out)`,
    )
    for (const { peer } of nodes.slice(1))
      assert.ok(peer.stats().gossip!.applied > 0)

      // flush({ acks }): persisted by the four others, though the delta went by gossip
    ;(await writer.set<string>('seen')).add('acked')
    await writer.flush({ acks: 4, timeoutMs: 15_000 })
    for (const { peer } of nodes.slice(1)) assert.ok((await peer.set<string>('seen')).has('acked'), `${peer.agentId} holds the acknowledged write`)

    // stop g-3, the others write, it restarts from its folder and catches up through anti-entropy
    const stopped = nodes[3]
    const port = multiaddr(stopped.address).decapsulateCode(421).toString()
    await stopped.peer.close()
    const alive = nodes.filter((n) => n !== stopped)
    for (const { peer } of alive) (await peer.counter('tasks')).increment(10)
    await untilConverged(alive, 'the four converge')
    nodes[3] = await startNode('g-3', join(dir.path, 'g-3'), { addresses: [port] })
    await untilConverged(nodes, 'g-3 catches up')
    assert.equal((await nodes[3].peer.counter('tasks')).value(), 15 + 40)
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
    await dir.remove()
  }
})

test('gossipsub: garbage, a forged sender, a forbidden write and an undecodable delta are counted and dropped; allowed writes apply', async () => {
  const nodes: Node[] = []
  try {
    // access decides by agent id, and with no per-peer secret the guard binds the id "mallory" to her libp2p key.
    const malloryKey = await generateKeyPair('Ed25519')
    const guard = await startNode(
      'guard',
      undefined,
      {},
      {
        access: (peer, name) => (peer === 'mallory' && !name.startsWith('open/') ? 'read' : 'write'),
        libp2p: { identities: { mallory: peerIdFromPrivateKey(malloryKey).toString() } },
      },
    )
    nodes.push(guard)
    const mallory = await startNode('mallory', undefined, { bootstrap: [guard.address], privateKey: malloryKey })
    nodes.push(mallory)
    await until(() => meshReady(nodes), 'mesh with gossip subscriptions')
    const stats = () => guard.peer.stats().gossip!
    const pubsub = mallory.peer.libp2p!.pubsub

    // an allowed write, by gossip
    ;(await mallory.peer.counter('open/x')).increment(5)
    await until(async () => (await guard.peer.counter('open/x')).value() === 5, 'allowed write applied')
    const good = (await mallory.peer.history('open/x'))[0].delta

    await pubsub.publish(TOPIC, new Uint8Array([1, 2, 3]))
    await pubsub.publish(TOPIC, new Uint8Array([9, 1, 1, 0]))
    await until(() => stats().malformed === 2, 'garbage counted as malformed')

    const forged = encodeGossipMessage({ run: 7, seq: 1, agent: 'admin', units: [[{ name: 'open/x', replicaType: 'pncounter', delta: good }]] })
    await pubsub.publish(TOPIC, forged)
    await until(() => stats().refused === 1, 'a forged sender id is refused')

    ;(await mallory.peer.counter('locked')).increment()
    await until(() => stats().refused === 2, 'a write mallory may not make is refused')

    const undecodable = encodeGossipMessage({
      run: 7,
      seq: 2,
      agent: 'mallory',
      units: [[{ name: 'open/y', replicaType: 'pncounter', delta: new Uint8Array([1, 255, 255]) }]],
    })
    await pubsub.publish(TOPIC, undecodable)
    await until(() => stats().refused === 3, 'an undecodable delta is refused by the store')

    assert.equal((await guard.peer.counter('open/x')).value(), 5, 'the forged unit changed nothing')
    const names = await guard.peer.names()
    assert.ok(!names.some((n) => n.name === 'locked'), 'the forbidden write never reached the store')
    // (the store keeps an empty entry for a new name whose first delta it refused: no record, no value)
    assert.ok(
      names.every((n) => n.name === 'open/x' || n.records === 0),
      JSON.stringify(names),
    )
    assert.equal(stats().applied, 1)
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
  }
})

test('gossipsub: a partition of five peers into two groups (libp2p block) with writes on both sides heals and converges', async () => {
  let nodes: Node[] = []
  try {
    nodes = await startMesh(5)
    await until(() => meshReady(nodes), 'full mesh with gossip subscriptions', 20_000)
    const left = nodes.slice(0, 2)
    const right = nodes.slice(2)
    const idOf = (n: Node) => n.peer.libp2p!.peerId
    for (const l of left) for (const r of right) await Promise.all([l.peer.libp2p!.block(idOf(r)), r.peer.libp2p!.block(idOf(l))])
    await until(
      () => left.every((n) => new Set(n.peer.connectedPeers).size === 1) && right.every((n) => new Set(n.peer.connectedPeers).size === 2),
      'partitioned',
    )

    for (const [i, { peer }] of nodes.entries()) {
      ;(await peer.counter('tasks')).increment(i + 1)
      ;(await peer.set<string>('seen')).add(`${i < 2 ? 'left' : 'right'}-${i}`)
      ;(await peer.yjs('ctx')).doc.getText('t').insert(0, `${i}`)
    }
    await untilConverged(left, 'the left group converges')
    await untilConverged(right, 'the right group converges')
    assert.equal((await left[0].peer.counter('tasks')).value(), 3, 'nothing crossed the partition')

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

test('gossipsub: a unit with provenance (another author, a message, a signature) is not published on gossip: the sessions carry it, with its author and signature', async () => {
  const dir = await tempDir('concord-libp2p-gossip-provenance-')
  const nodes: Node[] = []
  try {
    const signing = await generateKeyPair('Ed25519')
    const signer = peerIdFromPrivateKey(signing).toString()
    nodes.push(await startNode('g-0', join(dir.path, 'g-0'), {}, { signingKey: signing }))
    for (let i = 1; i < 3; i++) {
      nodes.push(await startNode(`g-${i}`, join(dir.path, `g-${i}`), { bootstrap: nodes.map((n) => n.address) }, { authorKeys: { 'g-0': signer } }))
    }
    await until(() => meshReady(nodes), 'full mesh with gossip subscriptions', 20_000)
    const [writer, , reader] = nodes.map((n) => n.peer)
    const notes = await writer.set<string>('notes')
    const before = writer.stats().gossip!
    await writer.transact(() => notes.add('for ana'), { agent: 'ana', message: 'made for ana' })
    await writer.transact(() => notes.add('signed'), { message: 'why' })
    await until(async () => (await reader.history('notes').catch(() => [])).length === 2, 'both reach the reader')
    assert.deepEqual(
      (await reader.history('notes')).map((h) => [h.agent, h.message, h.signature?.status ?? 'unsigned']),
      [
        ['ana', 'made for ana', 'unsigned'],
        ['g-0', 'why', 'verified'],
      ],
    )
    const after = writer.stats().gossip!
    assert.equal(after.withProvenance - before.withProvenance, 2, 'neither was published on gossip')
    assert.equal(after.published, before.published)
  } finally {
    await Promise.all(nodes.map((n) => n.peer.close().catch(() => undefined)))
    await dir.remove()
  }
})
