/**
 * Concord peers (createPeer, LevelDB) synced over the libp2p transport,
 * wired by hand with `peer.attach` (the composition root's libp2p options
 * are the lead's): five real libp2p nodes on 127.0.0.1 converge on every
 * type; one is stopped, the others keep writing, it restarts from its folder
 * (same PeerId, same port), is redialled, and catches up.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { multiaddr } from '@multiformats/multiaddr'
import { createPeer, type Peer } from '../../peer/index.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../transports/libp2p/index.ts'
import { until } from '../helpers/wait.ts'
import { tempDir } from '../helpers/temp-dir.ts'

interface Node {
  peer: Peer
  transport: Libp2pTransport
  address: string
  close(): Promise<void>
}

async function startNode(id: string, dir: string, bootstrap: string[], listen = '/ip4/127.0.0.1/tcp/0'): Promise<Node> {
  const peer = await createPeer({ id, dir })
  const transport = createLibp2pTransport({ dir, bootstrap, redial: { minDelayMs: 100, maxDelayMs: 1_000 } })
  transport.events.on('connection', (connection) => peer.attach(connection))
  const address = await transport.listen({ addresses: [listen] })
  return {
    peer, transport, address,
    close: async () => {
      // the transport first: it would otherwise reopen connections to a closing peer
      await transport.stop()
      await peer.close()
    },
  }
}

async function snapshot(peer: Peer): Promise<string> {
  return JSON.stringify({
    counter: (await peer.counter('tasks')).value(),
    set: [...(await peer.set<string>('seen')).values()].sort(),
    register: (await peer.register<{ step: number }>('plan')).value(),
    map: (await peer.map('facts')).value(),
    yjs: (await peer.yjs('ctx')).doc.getText('t').toString().length,
    automerge: [...((await peer.automerge<{ items?: string[] }>('spec')).doc.items ?? [])].sort(),
  })
}

async function converged(nodes: Node[]): Promise<boolean> {
  const all = await Promise.all(nodes.map((n) => snapshot(n.peer)))
  return all.every((s) => s === all[0])
}

test('five libp2p peers converge on every type; a stopped peer restarts from its folder, is redialled and catches up', async () => {
  const dir = await tempDir('concord-libp2p-peers-')
  const nodes: Node[] = []
  try {
    const addresses: string[] = []
    for (let i = 0; i < 5; i++) {
      const node = await startNode(`agent-${i}`, join(dir.path, `agent-${i}`), [...addresses])
      addresses.push(node.address)
      nodes.push(node)
    }
    await until(() => nodes.every((n) => n.peer.connectedPeers.length === 4), 'every peer has a session with the four others', 20_000)

    for (const [i, node] of nodes.entries()) {
      const { peer } = node
      ;(await peer.counter('tasks')).increment(i + 1)
      ;(await peer.set<string>('seen')).add(`url-${i}`)
      ;(await peer.map('facts')).set(`k${i}`, i)
      ;(await peer.yjs('ctx')).doc.getText('t').insert(0, `${i}`)
      ;(await peer.automerge<{ items?: string[] }>('spec')).change((doc) => { doc.items = [...(doc.items ?? []), `item-${i}`] })
    }
    ;(await nodes[2].peer.register<{ step: number }>('plan')).set({ step: 7 })
    await until(() => converged(nodes), 'five peers converge', 20_000)
    assert.equal((await nodes[0].peer.counter('tasks')).value(), 15)
    assert.equal((await nodes[4].peer.set<string>('seen')).size, 5)

    // stop agent-3; the others keep writing
    const stopped = nodes[3]
    const stoppedId = stopped.transport.peerId
    const port = multiaddr(stopped.address).decapsulateCode(421).toString()
    await stopped.close()
    const alive = nodes.filter((n) => n !== stopped)
    for (const [i, node] of alive.entries()) {
      ;(await node.peer.counter('tasks')).increment(10)
      ;(await node.peer.set<string>('seen')).add(`while-away-${i}`)
    }
    await until(() => converged(alive), 'the four converge while agent-3 is away', 20_000)

    // restart from the same folder and port, with no bootstrap: the others' redial brings it back
    const back = await startNode('agent-3', join(dir.path, 'agent-3'), [], port)
    nodes[3] = back
    assert.equal(back.transport.peerId, stoppedId, 'same PeerId from the key file')
    await until(() => converged(nodes), 'agent-3 catches up after the redial', 20_000).catch(async (error: Error) => {
      const state = await Promise.all(nodes.map(async (n) => `${n.peer.id}: libp2p ${n.transport.connectedPeers().length} sessions ${n.peer.connectedPeers.length} ${JSON.stringify(n.transport.stats)} ${await snapshot(n.peer)}`))
      throw new Error(`${error.message}\n${state.join('\n')}`)
    })
    assert.equal((await back.peer.counter('tasks')).value(), 15 + 40)
    assert.ok((await back.peer.set<string>('seen')).has('while-away-0'))
    assert.ok(alive.some((n) => n.transport.stats.redialed > 0), 'agent-3 came back through a redial')
  } finally {
    await Promise.all(nodes.map((n) => n.close().catch(() => undefined)))
    await dir.remove()
  }
})
