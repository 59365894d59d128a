/** Helpers of the history suites that run real peers (LevelDB folders, WebSocket on 127.0.0.1). */
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until, untilSynced } from '../helpers/wait.ts'

/** Runs `fn` with one peer per spec, each on a LevelDB folder of its own in a temp folder; closes them (last first) and removes it. */
export async function withPeers(specs: ReadonlyArray<{ agentId: string } & Partial<PeerOptions>>, fn: (peers: Peer[]) => Promise<void>): Promise<void> {
  const dir = await tempDir('concord-history-peers-')
  const peers: Peer[] = []
  try {
    for (const spec of specs) peers.push(await createPeer({ dir: join(dir.path, spec.agentId), ...spec }))
    await fn(peers)
  } finally {
    for (const peer of peers.reverse()) await peer.close()
    await dir.remove()
  }
}

/** An Ed25519 libp2p key and its PeerId. */
export async function keyPair() {
  const key = await generateKeyPair('Ed25519')
  return { key, peerId: peerIdFromPrivateKey(key).toString() }
}

/** `hub` listens and every one of `peers` connects to it; resolves with its URL once each pair finished its first anti-entropy. */
export async function connectThroughHub(hub: Peer, ...peers: Peer[]): Promise<string> {
  const { url } = await hub.listen()
  for (const peer of peers) await peer.connect(url)
  await untilSynced(hub, ...peers.map((peer) => peer.agentId))
  for (const peer of peers) await untilSynced(peer, hub.agentId)
  return url
}

/**
 * A hub (`<dir>/hub`) and one agent per id (`<dir>/<id>`), each a peer on its LevelDB folder connected to the hub.
 * `peers` holds every one, hub first (close them last first).
 */
export async function hubAndAgents<Id extends string>(dir: string, ids: readonly Id[]): Promise<{ hub: Peer; agents: Map<Id, Peer>; peers: Peer[] }> {
  const hub = await createPeer({ agentId: 'hub', dir: join(dir, 'hub') })
  const peers = [hub]
  const { url } = await hub.listen()
  const agents = new Map<Id, Peer>()
  for (const id of ids) {
    const peer = await createPeer({ agentId: id, dir: join(dir, id) })
    peers.push(peer)
    await peer.connect(url)
    agents.set(id, peer)
  }
  return { hub, agents, peers }
}

/** Resolves once every one of `peers` logged `name` up to `seq` (a sequential session: each change everywhere before the next). */
export function untilLoggedEverywhere(peers: readonly Peer[], name: string, seq: number, what: string): Promise<void> {
  return until(
    async () => (await Promise.all(peers.map(async (p) => (await p.names()).find((n) => n.name === name)?.lastSeq ?? 0))).every((s) => s === seq),
    what,
  )
}
