/**
 * Peers on real libp2p nodes for the libp2p peer suites: start one
 * listening on 127.0.0.1, write to every type, compare every type, and
 * wait for convergence with a per-node explanation when it times out.
 */
import { createPeer, type Peer, type PeerOptions } from '../../../peer/index.ts'
import { until } from '../../helpers/wait.ts'

/** A started peer and its first listen address. */
export interface Node {
  peer: Peer
  address: string
}

/** Fast redials for tests (a restarted node is found again within a second). */
export const FAST_REDIAL = { redial: { minDelayMs: 100, maxDelayMs: 1_000 } } as const

/** Creates a peer and listens over libp2p (`defaults`, then `libp2p`); closes it if listening fails. */
export async function startNode(
  id: string,
  dir: string | undefined,
  defaults: NonNullable<PeerOptions['libp2p']>,
  libp2p: NonNullable<PeerOptions['libp2p']> = {},
  extra: Partial<PeerOptions> = {},
): Promise<Node> {
  const peer = await createPeer({ agentId: id, dir, ...extra })
  try {
    const { multiaddrs } = await peer.listen({ libp2p: { ...defaults, ...libp2p } })
    return { peer, address: multiaddrs[0] }
  } catch (error) {
    await peer.close()
    throw error
  }
}

/** Every type's value on `peer`, order-insensitive where the type is. */
export async function snapshot(peer: Peer): Promise<string> {
  return JSON.stringify({
    counter: (await peer.counter('tasks')).value(),
    set: [...(await peer.set<string>('seen')).values()].sort(),
    register: (await peer.register<{ step: number }>('plan')).value(),
    mv: [...(await peer.mvRegister<string>('mood')).values()].sort(),
    flag: (await peer.flag('ready')).value(),
    gset: [...(await peer.gset<string>('log')).values()].sort(),
    map: (await peer.map('facts')).value(),
    yjs: (await peer.yjs('ctx')).doc.getText('t').toString().split('').sort().join(''),
    automerge: [...((await peer.automerge<{ items?: string[] }>('spec')).doc.items ?? [])].sort(),
  })
}

/** Waits until every node holds the same values; on timeout, `describe` says what each node holds. */
export async function untilConverged(nodes: Node[], what: string, describe: (node: Node) => string): Promise<void> {
  const converged = async () => {
    const all = await Promise.all(nodes.map((n) => snapshot(n.peer)))
    return all.every((s) => s === all[0])
  }
  await until(converged, what, 20_000).catch(async (error: Error) => {
    const lines = await Promise.all(nodes.map(async (n) => `${n.peer.agentId}: ${describe(n)} ${await snapshot(n.peer)}`))
    throw new Error(`${error.message}\n${lines.join('\n')}`)
  })
}
