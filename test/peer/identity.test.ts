/**
 * Identities that mean something (issue 11), on real sockets on 127.0.0.1:
 * createPeer refuses an `access` that decides by agent id when credentials
 * cannot tell peers apart; the handshake proves secrets without sending
 * them, so frames captured from a good handshake and replayed on a new
 * connection are refused; protocol-1 peers still sync both ways; wss:// with
 * a self-signed certificate trusted through `connect(url, { tls: { ca } })`;
 * libp2p ids bound to PeerIds.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { WebSocket, WebSocketServer } from 'ws'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { GCounterReplica, PNCounterReplica } from '../../crdt/types/index.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { attachSession } from '../../sync/attach.ts'
import { decodeMessage, type DecodedMessage } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import type { SyncSession } from '../../sync/session.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { MemoryHost } from '../sync/helpers/memory-host.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { selfSignedCertificate } from '../helpers/tls.ts'
import { until } from '../helpers/wait.ts'

const W_SECRET = 'writer-secret-7f3a9c1e5b2d4086'
const R_SECRET = 'reader-secret-0c8e2a4f6b1d3957'
const byId = (peer: string): 'write' | 'read' => (peer === 'writer' ? 'write' : 'read')

/** Runs `body` with a temp folder; closes every peer it tracked and removes the folder after. */
async function withPeers(body: (dir: string, track: (peer: Peer) => Peer) => Promise<void>): Promise<void> {
  const dir = await tempDir('concord-identity-')
  const peers: Peer[] = []
  try {
    await body(dir.path, (peer) => {
      peers.push(peer)
      return peer
    })
  } finally {
    await Promise.all(peers.map((peer) => peer.close().catch(() => undefined)))
    await dir.remove()
  }
}

/**
 * A WebSocket proxy in front of `target`: forwards both ways and records
 * every frame the client sent (what an eavesdropper on plain ws:// sees).
 */
async function recordingProxy(target: string): Promise<{ url: string; fromClient: Uint8Array[]; close: () => Promise<void> }> {
  const fromClient: Uint8Array[] = []
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  server.on('connection', (client) => {
    const upstream = new WebSocket(target)
    const early: Buffer[] = []
    client.on('message', (data: Buffer) => {
      fromClient.push(new Uint8Array(data))
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data)
      else early.push(data)
    })
    upstream.on('open', () => {
      for (const data of early.splice(0)) upstream.send(data)
    })
    upstream.on('message', (data: Buffer) => {
      if (client.readyState === WebSocket.OPEN) client.send(data)
    })
    upstream.on('close', () => client.close())
    upstream.on('error', () => client.terminate())
    client.on('close', () => upstream.close())
    client.on('error', () => upstream.terminate())
  })
  const { port } = server.address() as { port: number }
  return {
    url: `ws://127.0.0.1:${port}${new URL(target).pathname}`,
    fromClient,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate()
        server.close(() => resolve())
      }),
  }
}

/**
 * Sends `frames` to `url` on a new raw connection, as fast as it opens;
 * resolves with what came back once it closes, or once the server sent
 * VERSIONS (the replay was accepted).
 */
async function replay(url: string, frames: readonly Uint8Array[]): Promise<DecodedMessage[]> {
  const ws = new WebSocket(url)
  const received: DecodedMessage[] = []
  ws.on('message', (data: Buffer) => received.push(decodeMessage(new Uint8Array(data))))
  ws.on('error', () => undefined)
  let closed = false
  ws.once('close', () => {
    closed = true
  })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  for (const frame of frames) ws.send(frame)
  await until(() => closed || received.some((m) => m.type === 'versions'), 'the replayed connection to close or be answered')
  ws.terminate()
  return received
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  return Buffer.from(haystack).includes(Buffer.from(needle))
}

// ------------------------------------------------------------ refused at start

test('createPeer refuses an access function of the agent id when credentials cannot tell peers apart, and says how to fix it', async () => {
  const refused: Array<[string, PeerOptions, RegExp]> = [
    ['one shared token', { agentId: 's', access: byId, auth: { token: 'shared-secret' } }, /auth\.token is one secret shared by every peer/],
    ['one shared accept', { agentId: 's', access: byId, auth: { accept: 'shared-secret' } }, /auth\.accept is one secret shared by every peer/],
    ['no credentials', { agentId: 's', access: byId }, /requires no credentials/],
    [
      'two peers with one secret',
      { agentId: 's', access: byId, auth: { accept: { writer: 'same-secret', reader: 'same-secret' } } },
      /peers "writer" and "reader" share one secret/,
    ],
  ]
  for (const [what, options, why] of refused) {
    await assert.rejects(
      createPeer(options),
      (error) => {
        assert.ok(isConcordError(error, ErrorCodes.INVALID_ARGUMENT), `${what}: ${String(error)}`)
        assert.match(error.message, why, what)
        assert.match(error.message, /auth\.accept: \{ agentId: secret \}/, `${what}: says how to fix it`)
        assert.match(error.message, /trustClaimedIds/, `${what}: names the opt-out`)
        return true
      },
      what,
    )
  }
  await assert.rejects(createPeer({ agentId: 's', auth: { accept: { writer: '' } } }), /the secret of "writer" must be a non-empty string/)
  await assert.rejects(createPeer({ agentId: 's', auth: { token: '' } }), /auth\.token must be a non-empty string/)

  const accepted: Array<[string, PeerOptions]> = [
    ['per-peer secrets', { agentId: 's', access: byId, auth: { accept: { writer: W_SECRET, reader: R_SECRET } } }],
    ['a secret lookup', { agentId: 's', access: byId, auth: { accept: (peer: string) => (peer === 'writer' ? W_SECRET : undefined) } }],
    [
      'access by name only, said so',
      { agentId: 's', access: (_peer, name) => (name.startsWith('ro/') ? 'read' : 'write'), auth: { token: 'shared-secret', trustClaimedIds: true } },
    ],
    ['a shared secret without access', { agentId: 's', auth: { token: 'shared-secret' } }],
    ['libp2p identities', { agentId: 's', access: byId, libp2p: { identities: { writer: '12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq' } } }],
  ]
  for (const [_what, options] of accepted) await (await createPeer(options)).close()
})

// ------------------------------------------------------------ the secret never travels; a replay is refused

test(
  'over plain ws:// the secret never travels, a peer holding another secret cannot claim the id, and a captured handshake replayed on a new connection is refused',
  { timeout: 60_000 },
  () =>
    withPeers(async (dir, track) => {
      const auth = { accept: { writer: W_SECRET, reader: R_SECRET } }
      const server = track(await createPeer({ agentId: 'server', dir: join(dir, 'server'), auth, access: byId }))
      const { url } = await server.listen()
      const refusals: string[] = []
      server.events.on('refused', ({ by, reason }) => refusals.push(`${by}:${reason}`))
      const proxy = await recordingProxy(url)
      try {
        const writer = track(await createPeer({ agentId: 'writer', dir: join(dir, 'writer'), auth: { token: W_SECRET } }))
        await writer.connect(proxy.url)
        const counter = await writer.counter('budget')
        counter.increment(5)
        await writer.flush({ acks: 1 })
        assert.equal((await server.counter('budget')).value(), 5)
        const types = proxy.fromClient.map((frame) => decodeMessage(frame).type)
        assert.ok(types.includes('delta') || types.includes('transaction'), `the capture holds the write: ${types.join()}`)

        // Every frame the writer sent, replayed on a new connection to the same server ...
        const again = await replay(url, proxy.fromClient)
        const refuse = again.find((m) => m.type === 'refuse')
        assert.ok(refuse?.type === 'refuse' && refuse.reason === 'auth', JSON.stringify(again.map((m) => m.type)))
        assert.deepEqual(
          again.map((m) => m.type).filter((t) => t !== 'hello' && t !== 'refuse'),
          [],
          'no proof, no VERSIONS, no data',
        )
        assert.ok(refusals.includes('local:auth'))

        // ... and to a fresh server with the same credentials, whose store stays empty.
        const fresh = track(await createPeer({ agentId: 'server', dir: join(dir, 'fresh'), auth, access: byId }))
        const { url: freshUrl } = await fresh.listen()
        const replayed = await replay(freshUrl, proxy.fromClient)
        assert.ok(
          replayed.some((m) => m.type === 'refuse' && m.reason === 'auth'),
          JSON.stringify(replayed.map((m) => m.type)),
        )
        assert.deepEqual(
          (await fresh.names()).map((n) => n.name),
          [],
          'nothing the replay carried was applied',
        )

        // What the capture holds: HELLO and AUTH first, and nowhere the secret.
        assert.deepEqual(types.slice(0, 2), ['hello', 'auth'], types.join())
        const secret = new TextEncoder().encode(W_SECRET)
        assert.ok(
          proxy.fromClient.every((frame) => !contains(frame, secret)),
          'the secret is in no frame the client sent',
        )

        // The reader's secret does not make its holder the writer.
        const impostor = track(await createPeer({ agentId: 'writer', auth: { token: R_SECRET } }))
        await assert.rejects(impostor.connect(url), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
      } finally {
        await proxy.close()
      }
    }),
)

// ------------------------------------------------------------ protocol 1 peers

/** A protocol-1 session on `host` over a dialed WebSocket connection. */
async function v1Dial(url: string, host: MemoryHost, options: { token?: string } = {}): Promise<SyncSession> {
  const transport = new WebSocketTransport()
  const session = attachSession(await transport.dial(url), host, { agentId: agentId(host.id), versions: { min: 1, max: 1 }, ...options })
  session.events.once('close', () => void transport.stop())
  return session
}

test(
  'a protocol-1 peer still syncs with a protocol-2 peer over real sockets, both directions; its clear token only with legacyBearer',
  { timeout: 60_000 },
  () =>
    withPeers(async (dir, track) => {
      // The old peer dials the new one.
      const server = track(await createPeer({ agentId: 'server', dir: join(dir, 'server') }))
      const { url } = await server.listen()
      ;(await server.counter('from-new')).increment(3)
      const old = new MemoryHost('old')
      ;(old.open('from-old', 'gcounter') as GCounterReplica).increment(4)
      const dialed = await v1Dial(url, old)
      await until(() => dialed.state === 'open', 'the v1 dialer opens')
      await until(async () => (await server.gcounter('from-old')).value() === 4, "the new peer has the old one's counter")
      await until(() => JSON.stringify(old.values()['from-new']) === '3', "the old peer has the new one's counter")
      dialed.close('done')

      // The new peer dials the old one.
      const listener = new WebSocketTransport()
      const oldServer = new MemoryHost('old-server')
      ;(oldServer.open('held-by-old', 'pncounter') as PNCounterReplica).increment(2)
      listener.events.on('connection', (connection) => attachSession(connection, oldServer, { agentId: agentId('old-server'), versions: { min: 1, max: 1 } }))
      const oldUrl = await listener.listen({ port: 0 })
      try {
        const client = track(await createPeer({ agentId: 'client', dir: join(dir, 'client') }))
        await client.connect(oldUrl)
        await until(async () => (await client.counter('held-by-old')).value() === 2, "the new dialer has the old listener's counter")
        ;(await client.counter('held-by-old')).increment(1)
        await until(() => JSON.stringify(oldServer.values()['held-by-old']) === '3', 'and the old listener has its change')
      } finally {
        await listener.stop()
      }

      // With credentials: a v1 peer's clear token is refused by default, accepted with legacyBearer.
      const strict = track(await createPeer({ agentId: 'strict', auth: { accept: { old: W_SECRET } }, access: byId }))
      const strictUrl = (await strict.listen()).url
      const refusedOld = await v1Dial(strictUrl, new MemoryHost('old'), { token: W_SECRET })
      const why = await new Promise<string>((resolve) => refusedOld.events.once('refused', (r) => resolve(`${r.by}:${r.reason}:${r.message}`)))
      assert.match(why, /^remote:auth:.*protocol 1 only.*legacyBearer/)
      const lenient = track(await createPeer({ agentId: 'lenient', auth: { accept: { old: W_SECRET }, legacyBearer: true }, access: byId }))
      const acceptedOld = await v1Dial((await lenient.listen()).url, new MemoryHost('old'), { token: W_SECRET })
      await until(() => acceptedOld.state === 'open', 'legacyBearer accepts the v1 token')
      acceptedOld.close('done')
    }),
)

// ------------------------------------------------------------ wss://

test('wss:// between peers: a self-signed certificate (openssl) trusted with connect(url, { tls: { ca } }); untrusted, connect fails at once', {
  timeout: 60_000,
}, async (t) => {
  await withPeers(async (dir, track) => {
    const certificate = await selfSignedCertificate(dir)
    if (!certificate) return t.skip('openssl is not available')
    const server = track(await createPeer({ agentId: 'server', dir: join(dir, 'server'), auth: { accept: { writer: W_SECRET } }, access: byId }))
    const { url } = await server.listen({ tls: { key: certificate.key, cert: certificate.cert } })
    assert.match(url, /^wss:\/\/127\.0\.0\.1:\d+\/concord$/)

    const untrusting = track(await createPeer({ agentId: 'writer', auth: { token: W_SECRET } }))
    await assert.rejects(untrusting.connect(url), (error) => {
      assert.ok(isConcordError(error, ErrorCodes.AUTH_FAILED), String(error))
      assert.match(error.message, /certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\).*tls: \{ ca \}/)
      return true
    })

    const client = track(await createPeer({ agentId: 'writer', dir: join(dir, 'writer'), auth: { token: W_SECRET } }))
    await client.connect(url, { tls: { ca: certificate.cert } })
    ;(await client.counter('over-tls')).increment(9)
    await client.flush({ acks: 1 })
    assert.equal((await server.counter('over-tls')).value(), 9)
    const other = await selfSignedCertificate(dir, 'other')
    const wrongCa = track(await createPeer({ agentId: 'writer', auth: { token: W_SECRET } }))
    await assert.rejects(wrongCa.connect(url, { tls: { ca: other!.cert } }), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
  })
})

// ------------------------------------------------------------ libp2p: ids bound to PeerIds

test(
  'libp2p: with libp2p.identities, an id is accepted only from the PeerId bound to it; WebSocket, which carries no PeerId, is refused at listen',
  { timeout: 90_000 },
  () =>
    withPeers(async (_dir, track) => {
      const writerKey = await generateKeyPair('Ed25519')
      const writerPeerId = peerIdFromPrivateKey(writerKey).toString()
      const server = track(await createPeer({ agentId: 'server', access: byId, libp2p: { identities: { writer: writerPeerId } } }))
      const { multiaddrs } = await server.listen({ libp2p: {} })
      await assert.rejects(
        server.listen({ port: 0 }),
        (error) => isConcordError(error, ErrorCodes.INVALID_ARGUMENT) && /libp2p\.identities/.test(error.message),
      )

      const writer = track(await createPeer({ agentId: 'writer', libp2p: { privateKey: writerKey } }))
      await writer.connect(multiaddrs[0])
      ;(await writer.counter('bound')).increment(2)
      await until(async () => (await server.counter('bound')).value() === 2, 'the bound writer writes')

      const impostor = track(await createPeer({ agentId: 'writer' }))
      await assert.rejects(impostor.connect(multiaddrs[0]), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
      await writer.close() // one node per key at a time
      const wrongId = track(await createPeer({ agentId: 'reader', libp2p: { privateKey: writerKey } }))
      await assert.rejects(wrongId.connect(multiaddrs[0]), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
      const stranger = track(await createPeer({ agentId: 'stranger' }))
      await assert.rejects(stranger.connect(multiaddrs[0]), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
      assert.equal((await server.counter('bound')).value(), 2)
    }),
)
