import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import { WebSocketServer } from 'ws'
import { createPeer, type Peer, type PeerEvents } from '../../peer/index.ts'
import { ErrorCodes, isConcordError, type ErrorCode } from '../../crdt/errors.ts'
import { until } from '../helpers/wait.ts'

const hasCode = (code: ErrorCode, message?: RegExp) => (error: unknown) => {
  assert.ok(isConcordError(error, code), `expected ${code}, got ${String(error)}`)
  if (message) assert.match((error as Error).message, message)
  return true
}

async function withPeers(
  fn: (make: (id: string, options?: Omit<Parameters<typeof createPeer>[0], 'agentId'>) => Promise<Peer>) => Promise<void>,
): Promise<void> {
  const peers: Peer[] = []
  try {
    await fn(async (id, options = {}) => {
      const peer = await createPeer({ agentId: id, ...options })
      peers.push(peer)
      return peer
    })
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
}

async function listenRaw(onSocket: (socket: Socket) => void): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
    onSocket(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A port nothing listens on (bound once, then released). */
async function closedPort(): Promise<number> {
  const raw = await listenRaw(() => undefined)
  await raw.close()
  return raw.port
}

test('connect: an address that is not a ws:// or wss:// URL rejects at once with CONCORD_INVALID_ARGUMENT', () =>
  withPeers(async (make) => {
    const peer = await make('a')
    await assert.rejects(peer.connect('not a url'), hasCode(ErrorCodes.INVALID_ARGUMENT, /not a URL/))
    await assert.rejects(peer.connect('http://nope'), hasCode(ErrorCodes.INVALID_ARGUMENT, /ws:\/\/nope\/concord/))
    await assert.rejects(peer.connect('https://nope:4400/concord'), hasCode(ErrorCodes.INVALID_ARGUMENT, /wss:\/\/nope:4400\/concord/))
    await assert.rejects(peer.connect('ftp://nope'), hasCode(ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(peer.connect(''), hasCode(ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(peer.connect(42 as unknown as string), hasCode(ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(peer.connect('ws://alice:secret@127.0.0.1:1/concord'), hasCode(ErrorCodes.INVALID_ARGUMENT, /auth\.token/))
    await assert.rejects(peer.connect('ws://127.0.0.1:1/concord', { timeoutMs: -1 }), hasCode(ErrorCodes.INVALID_ARGUMENT, /timeoutMs/))
    assert.equal(peer.disconnect('not a url'), 0, 'nothing was left dialing')
  }))

test('connect: a closed port rejects with CONCORD_UNREACHABLE saying nothing listens there', () =>
  withPeers(async (make) => {
    const peer = await make('a')
    const port = await closedPort()
    await assert.rejects(
      peer.connect(`ws://127.0.0.1:${port}/concord`),
      hasCode(ErrorCodes.UNREACHABLE, new RegExp(`connection refused: nothing listens at 127\\.0\\.0\\.1:${port}`)),
    )
    assert.equal(peer.disconnect(`ws://127.0.0.1:${port}/concord`), 0, 'a failed first attempt leaves no reconnector behind')
  }))

test('connect: the wrong path rejects with what answered (HTTP 404) and where Concord listens', () =>
  withPeers(async (make) => {
    const server = await make('server')
    const client = await make('client')
    const { port } = await server.listen()
    await assert.rejects(client.connect(`ws://127.0.0.1:${port}/`), hasCode(ErrorCodes.UNREACHABLE, /HTTP 404 at \/; Concord peers listen at \/concord/))
    await assert.rejects(
      client.connect(`ws://127.0.0.1:${port}/concrd`),
      hasCode(ErrorCodes.UNREACHABLE, /HTTP 404 at \/concrd; Concord peers listen at \/concord/),
    )
    // Another HTTP server (not Concord): its status, and a hint.
    const other = await listenRaw((socket) => socket.once('data', () => socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')))
    try {
      await assert.rejects(
        client.connect(`ws://127.0.0.1:${other.port}/concord`),
        hasCode(ErrorCodes.UNREACHABLE, /HTTP 403 at \/concord \(not a Concord peer\?\)/),
      )
    } finally {
      await other.close()
    }
    await client.connect(`ws://127.0.0.1:${port}/concord`)
    assert.deepEqual(client.connectedPeers, ['server'])
  }))

test('connect: a server that never answers, or never speaks Concord, fails the first attempt within timeoutMs', () =>
  withPeers(async (make) => {
    const client = await make('client')
    const silent = await listenRaw(() => undefined) // accepts TCP, never answers the upgrade
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' }) // upgrades, then says nothing
    await new Promise((resolve) => wss.once('listening', resolve))
    try {
      await assert.rejects(
        client.connect(`ws://127.0.0.1:${silent.port}/concord`, { timeoutMs: 300 }),
        hasCode(ErrorCodes.TIMEOUT, /no Concord handshake within 300 ms/),
      )
      const port = (wss.address() as { port: number }).port
      await assert.rejects(client.connect(`ws://127.0.0.1:${port}/concord`, { timeoutMs: 300 }), hasCode(ErrorCodes.TIMEOUT))
      // Upgrades and hangs up at once: the first attempt fails with what happened.
      wss.on('connection', (ws) => ws.close(1013, 'try again later'))
      await assert.rejects(
        client.connect(`ws://127.0.0.1:${port}/concord`),
        hasCode(ErrorCodes.UNREACHABLE, /closed the connection before the Concord handshake completed/),
      )
    } finally {
      await silent.close()
      for (const ws of wss.clients) ws.terminate()
      await new Promise((resolve) => wss.close(resolve))
    }
  }))

test('connect: credentials of the remote refused by this side (acceptDialed) reject the first attempt', () =>
  withPeers(async (make) => {
    const server = await make('server', { auth: { token: 'server-secret' } })
    const client = await make('client', { auth: { token: 'server-secret', acceptDialed: () => undefined } })
    const { url } = await server.listen()
    await assert.rejects(client.connect(url), hasCode(ErrorCodes.AUTH_FAILED, /refused/))
    assert.equal(client.disconnect(url), 0)
  }))

test('connect: once a connection was up, it is redialled with backoff (reconnecting events) until the remote is back', () =>
  withPeers(async (make) => {
    const first = await make('server')
    const client = await make('client')
    const { port, url } = await first.listen()
    await client.connect(url)
    const events: Array<PeerEvents['reconnecting']> = []
    client.on('reconnecting', (event) => events.push(event))
    await first.close()
    await until(() => events.some((e) => e.attempt >= 1 && e.error !== undefined), 'a failed redial is reported')
    assert.equal(events[0].attempt, 0, 'the drop itself is the first event')
    assert.equal(events[0].url, url)
    const failed = events.find((e) => e.error !== undefined)!
    assert.ok(isConcordError(failed.error, ErrorCodes.UNREACHABLE))
    assert.ok(failed.delayMs > 0)
    // The same address comes back: the client reconnects by itself.
    const second = await make('server-2')
    await second.listen({ port })
    await until(() => client.connectedPeers.includes('server-2'), 'reconnected to the address once it listens again', 20_000)
  }))

test('peer.on / once / off: the peer is an event source as Node users expect', () =>
  withPeers(async (make) => {
    const server = await make('server')
    const client = await make('client')
    const seen: string[] = []
    const onConnected = ({ agentId }: { agentId: string }) => seen.push(`on:${agentId}`)
    const unsubscribe = client.on('peer-connected', onConnected)
    client.once('peer-connected', ({ agentId }) => seen.push(`once:${agentId}`))
    const removed = ({ agentId }: { agentId: string }) => seen.push(`removed:${agentId}`)
    client.once('peer-connected', removed)
    client.off('peer-connected', removed) // off removes a once-listener too
    const synced = new Promise<string>((resolve) => client.once('peer-synced', ({ agentId }) => resolve(agentId)))
    const { url } = await server.listen()
    await client.connect(url)
    assert.equal(await synced, 'server')
    client.disconnect(url)
    await until(() => client.connectedPeers.length === 0, 'disconnected')
    unsubscribe()
    await client.connect(url)
    assert.deepEqual(seen, ['on:server', 'once:server'])
    const other = ({ agentId }: { agentId: string }) => seen.push(`again:${agentId}`)
    client.on('peer-disconnected', () => seen.push('disconnected'))
    client.on('peer-connected', other)
    client.off('peer-connected', other)
    client.disconnect(url)
    await until(() => seen.includes('disconnected'), 'the disconnect event')
    assert.ok(!seen.some((s) => s.startsWith('again:')))
  }))

test('listen: beyond loopback with no credentials warns (open-access); loopback or credentials do not', () =>
  withPeers(async (make) => {
    const open = await make('open')
    const warnings: Array<PeerEvents['warning']> = []
    open.on('warning', (warning) => warnings.push(warning))
    await open.listen({ host: '0.0.0.0' })
    assert.equal(warnings.length, 1)
    assert.equal(warnings[0].kind, 'open-access')
    assert.equal(warnings[0].address, '0.0.0.0')
    assert.match(warnings[0].message, /no credentials: any machine that reaches it can read and write every name/)

    const local = await make('local')
    const localWarnings: unknown[] = []
    local.on('warning', (warning) => localWarnings.push(warning))
    await local.listen()
    const guarded = await make('guarded', { auth: { token: 't' } })
    guarded.on('warning', (warning) => localWarnings.push(warning))
    await guarded.listen({ host: '0.0.0.0' })
    assert.deepEqual(localWarnings, [])
  }))

test('listen: a port in use is CONCORD_ADDRESS_IN_USE naming the port', () =>
  withPeers(async (make) => {
    const first = await make('first')
    const second = await make('second')
    const { port } = await first.listen()
    await assert.rejects(
      second.listen({ port }),
      hasCode(ErrorCodes.ADDRESS_IN_USE, new RegExp(`port ${port} is in use on 127\\.0\\.0\\.1 \\(another concord serve\\?\\)`)),
    )
    // The failed listen left the peer usable: another port works.
    const { url } = await second.listen({ port: 0 })
    await first.connect(url)
  }))
