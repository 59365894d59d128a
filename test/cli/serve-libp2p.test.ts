/**
 * `concord serve --libp2p`: serves over libp2p beside WebSocket, with its
 * PeerId kept in the folder, `--allow` enforced, `--gossipsub` fan-out, and
 * `--connect`/`--bootstrap` taking multiaddrs. Real libp2p nodes on
 * 127.0.0.1; the serve runs in-process and stops on its signal.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { createPeer, type Peer } from '../../peer/index.ts'
import { loadOrCreatePrivateKey } from '../../transports/libp2p/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { cli, cliJson } from './helpers.ts'

type Info = { url: string; libp2p?: { peerId: string; multiaddrs: string[] } }

/** Starts `concord serve` in-process; resolves once it listens. */
async function serve(args: string[]): Promise<{ info: Info; stop: () => Promise<{ code: number; stderr: string }> }> {
  const controller = new AbortController()
  let info: Info | undefined
  const running = cli(['serve', '--port', '0', ...args], {
    signal: controller.signal,
    onListening: (i) => {
      info = i
    },
  })
  let failed: { code: number; stderr: string } | undefined
  void running.then((run) => {
    failed = run
  })
  await until(() => info !== undefined || failed !== undefined, 'serve listens', 20_000)
  if (!info) throw new Error(`serve exited: ${failed!.code} ${failed!.stderr}`)
  return {
    info,
    stop: async () => {
      controller.abort()
      return running
    },
  }
}

test('serve --libp2p --gossipsub --allow: listed peers sync over libp2p, others are refused; the PeerId is kept in the folder', async () => {
  const root = await tempDir('concord-serve-libp2p-')
  const dir = join(root.path, 'relay')
  const friendDir = join(root.path, 'friend')
  const friendId = peerIdFromPrivateKey(await loadOrCreatePrivateKey(friendDir)).toString()
  const peers: Peer[] = []
  let server = await serve(['--dir', dir, '--id', 'relay', '--gossipsub', '--allow', friendId])
  try {
    const first = server.info.libp2p!
    assert.ok(first.multiaddrs.length > 0 && first.multiaddrs.every((ma) => ma.endsWith(`/p2p/${first.peerId}`)), JSON.stringify(first))
    assert.match(server.info.url, /^ws:\/\/127\.0\.0\.1:\d+\/concord$/, 'WebSocket still served')

    const friend = await createPeer({ agentId: 'friend', dir: friendDir, libp2p: { gossipsub: true } })
    peers.push(friend)
    const friendAddress = (await friend.listen({ libp2p: {} })).multiaddrs[0]
    await friend.connect(first.multiaddrs[0])
    ;(await friend.counter('visits')).increment(41)
    await friend.flush({ acks: 1 })

    const stranger = await createPeer({ agentId: 'stranger' })
    peers.push(stranger)
    await assert.rejects(stranger.connect(first.multiaddrs[0]), (error: unknown) => isConcordError(error) && error.code === ErrorCodes.UNREACHABLE)
    assert.deepEqual(await stranger.names(), [])

    const stopped = await server.stop()
    assert.equal(stopped.code, 0, stopped.stderr)
    assert.equal((await cliJson(['inspect', '--dir', dir, 'visits'])).json.value, 41)

    // same folder, same PeerId; --connect takes a multiaddr (the friend's node)
    server = await serve(['--dir', dir, '--libp2p', '--connect', friendAddress])
    assert.equal(server.info.libp2p!.peerId, first.peerId, 'PeerId from the key in the folder')
    await until(() => friend.connectedPeers.includes('relay'), 'the restarted serve dialled the friend (--connect multiaddr)')
  } finally {
    await server.stop()
    await Promise.all(peers.map((peer) => peer.close()))
    await root.remove()
  }
})

test('serve: bad libp2p flags are usage errors (exit 2)', async () => {
  const root = await tempDir('concord-serve-libp2p-bad-')
  try {
    const dir = join(root.path, 'never')
    const bootstrap = await cli(['serve', '--dir', dir, '--bootstrap', 'not-a-multiaddr'])
    assert.equal(bootstrap.code, 2, bootstrap.stderr)
    assert.match(bootstrap.stderr, /multiaddr/)
    const allow = await cli(['serve', '--dir', dir, '--port', '0', '--allow', 'not-a-peer-id'])
    assert.equal(allow.code, 2, allow.stderr)
    assert.match(allow.stderr, /PeerId/)
  } finally {
    await root.remove()
  }
})
