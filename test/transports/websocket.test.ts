import { describe, it, test } from 'node:test'
import assert from 'node:assert/strict'
import { connect as netConnect } from 'node:net'
import { WebSocket, WebSocketServer } from 'ws'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { Reconnector, backoffDelay } from '../../transports/reconnect.ts'
import type { Connection } from '../../transports/transport.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { runTransportTests } from '../../testing/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { selfSignedCertificate } from '../helpers/tls.ts'

runTransportTests({ describe, it }, 'websocket', async () => {
  const server = new WebSocketTransport()
  const address = await server.listen({ port: 0, host: '127.0.0.1' })
  const client = new WebSocketTransport()
  return {
    server,
    client,
    address,
    teardown: async () => {
      await client.stop()
      await server.stop()
    },
  }
})

function nextEvent<T>(emitter: { once(event: string, listener: (payload: T) => void): unknown }, event: string): Promise<T> {
  return new Promise((resolve) => emitter.once(event, resolve))
}

/** Opens a raw `ws` client (not our transport) to send bad input. */
function rawClient(url: string, options: ConstructorParameters<typeof WebSocket>[2] = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options)
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
  })
}

async function echoPair(_server: WebSocketTransport, address: string): Promise<{ client: WebSocketTransport; connection: Connection }> {
  const client = new WebSocketTransport()
  const connection = await client.dial(address)
  return { client, connection }
}

async function roundTrip(connection: Connection, bytes: Uint8Array): Promise<Uint8Array> {
  const reply = nextEvent<Uint8Array>(connection.events as never, 'message')
  await connection.send(bytes)
  return reply
}

test('websocket: malformed, text and oversized frames close only that client; the server and others stay up', async () => {
  const server = new WebSocketTransport({ maxPayload: 64 * 1024 })
  const address = await server.listen({ port: 0 })
  server.events.on('connection', (c) => c.events.on('message', (f) => void c.send(f).catch(() => {})))
  const good = await echoPair(server, address)
  try {
    assert.deepEqual(await roundTrip(good.connection, new Uint8Array([1, 2, 3])), new Uint8Array([1, 2, 3]))

    // an oversized frame
    const big = await rawClient(address)
    const bigClosed = nextEvent<number>(big as never, 'close')
    big.send(new Uint8Array(64 * 1024 + 1))
    assert.equal(await bigClosed, 1009)

    // a text frame
    const text = await rawClient(address)
    const textClosed = nextEvent<number>(text as never, 'close')
    text.send('hello')
    await textClosed

    // a broken WebSocket frame at the byte level (reserved opcode 0x3, unmasked) on a raw socket
    const url = new URL(address)
    const garbage = netConnect(Number(url.port), url.hostname)
    garbage.on('error', () => {})
    await nextEvent(garbage as never, 'connect')
    garbage.write(
      `GET ${url.pathname} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    )
    await nextEvent(garbage as never, 'data')
    garbage.write(Buffer.from([0x83, 0x05, 1, 2, 3, 4, 5]))
    await nextEvent(garbage as never, 'close')

    // an upgrade on an unknown path is refused; plain HTTP gets 426
    await assert.rejects(rawClient(address.replace('/concord', '/nope')))
    const http = await fetch(address.replace('ws://', 'http://'))
    assert.equal(http.status, 426)

    // the good client is unaffected, and new clients still connect
    assert.deepEqual(await roundTrip(good.connection, new Uint8Array([4, 5])), new Uint8Array([4, 5]))
    const late = await echoPair(server, address)
    assert.deepEqual(await roundTrip(late.connection, new Uint8Array([6])), new Uint8Array([6]))
    await late.client.stop()
  } finally {
    await good.client.stop()
    await server.stop()
  }
})

test('websocket: a send larger than the remote maxPayload ends that connection with a close, not a crash', async () => {
  const server = new WebSocketTransport({ maxPayload: 1024 })
  const address = await server.listen({ port: 0 })
  const accepted = nextEvent<Connection>(server.events as never, 'connection')
  const client = new WebSocketTransport()
  const connection = await client.dial(address)
  const inbound = await accepted
  const closes = [nextEvent(connection.events as never, 'close'), nextEvent(inbound.events as never, 'close')]
  await connection.send(new Uint8Array(4096)).catch(() => {})
  await Promise.all(closes)
  await assert.rejects(connection.send(new Uint8Array(1)), (e) => isConcordError(e, ErrorCodes.CLOSED))
  await client.stop()
  await server.stop()
})

test('websocket: heartbeat detects a silent peer', async () => {
  const server = new WebSocketTransport({ heartbeatIntervalMs: 40 })
  const address = await server.listen({ port: 0 })
  const accepted = nextEvent<Connection>(server.events as never, 'connection')
  // a client that never answers pings (its process is stuck, its network gone)
  const silent = await rawClient(address, { autoPong: false })
  const inbound = await accepted
  const closed = await nextEvent<{ reason?: string }>(inbound.events as never, 'close')
  assert.equal(closed.reason, 'heartbeat timeout')
  silent.terminate()
  await server.stop()
})

test('websocket: dial failures are CONCORD_UNREACHABLE; abort is CONCORD_ABORTED', async () => {
  const probe = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await nextEvent(probe as never, 'listening')
  const port = (probe.address() as { port: number }).port
  await new Promise((resolve) => probe.close(resolve))
  const client = new WebSocketTransport()
  await assert.rejects(client.dial(`ws://127.0.0.1:${port}/concord`), (e) => isConcordError(e, ErrorCodes.UNREACHABLE))
  const controller = new AbortController()
  controller.abort()
  await assert.rejects(client.dial(`ws://127.0.0.1:${port}/concord`, { signal: controller.signal }), (e) => isConcordError(e, ErrorCodes.ABORTED))
  await assert.rejects(client.dial('not a url'), (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT))
  await client.stop()
})

test('websocket: another protocol can be mounted on another path of the same server', async () => {
  const server = new WebSocketTransport()
  const other = new WebSocketServer({ noServer: true })
  const rooms: string[] = []
  other.on('connection', (ws, request) => {
    rooms.push(request.url ?? '')
    ws.on('message', (data) => ws.send(data))
  })
  server.route('/yjs', (request, socket, head) => other.handleUpgrade(request, socket, head, (ws) => other.emit('connection', ws, request)))
  assert.throws(
    () => server.route('/concord', () => {}),
    (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
  )
  const address = await server.listen({ port: 0 })
  const yjs = await rawClient(address.replace('/concord', '/yjs/my-room'))
  const echoed = nextEvent<Buffer>(yjs as never, 'message')
  yjs.send(Buffer.from([9]))
  assert.deepEqual([...(await echoed)], [9])
  assert.deepEqual(rooms, ['/yjs/my-room'])
  yjs.close()
  other.close()
  await server.stop()
})

test('websocket: plain HTTP requests under a mounted path reach their handler; other requests get 426', async () => {
  const server = new WebSocketTransport()
  const seen: string[] = []
  server.routeRequests('/mcp', (request, response) => {
    seen.push(`${request.method} ${request.url}`)
    response.writeHead(200, { 'content-type': 'text/plain' }).end('routed')
  })
  assert.throws(
    () => server.routeRequests('/concord', () => {}),
    (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT),
  )
  server.routeRequests('/boom', () => {
    throw new Error('handler bug')
  })
  try {
    const base = (await server.listen({ port: 0 })).replace('ws://', 'http://').replace('/concord', '')
    const routed = await fetch(`${base}/mcp/sub?x=1`, { method: 'POST', body: '{}' })
    assert.equal(routed.status, 200)
    assert.equal(await routed.text(), 'routed')
    assert.equal((await fetch(`${base}/other`)).status, 426)
    assert.equal((await fetch(`${base}/mcpx`)).status, 426, 'a path that only starts like the mount is not it')
    assert.equal((await fetch(`${base}/boom`)).status, 500, 'a throwing handler is answered, the server stays up')
    assert.equal((await fetch(`${base}/mcp`)).status, 200)
    assert.deepEqual(seen, ['POST /mcp/sub?x=1', 'GET /mcp'])
  } finally {
    await server.stop()
  }
})

test('websocket: a routed HTTP request may take longer than the upgrade deadline (an MCP stream); other sockets still get it', async () => {
  const server = new WebSocketTransport()
  server.routeRequests('/slow', (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' })
    response.write('first ')
    setTimeout(() => response.end('and last'), 600)
  })
  try {
    const base = (await server.listen({ port: 0, upgradeTimeoutMs: 200 })).replace('ws://', 'http://').replace('/concord', '')
    const slow = await fetch(`${base}/slow`)
    assert.equal(await slow.text(), 'first and last', 'not cut at the upgrade deadline')
  } finally {
    await server.stop()
  }
})

test('reconnect: backoff grows, is capped, and has jitter', () => {
  const options = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 }
  assert.equal(
    backoffDelay(0, options, () => 0),
    100,
  )
  assert.equal(
    backoffDelay(3, options, () => 0),
    800,
  )
  assert.equal(
    backoffDelay(10, options, () => 0),
    1000,
  )
  assert.equal(
    backoffDelay(10, options, () => 0.999999),
    1000 * (1 - 0.5 * 0.999999),
  )
  assert.equal(
    backoffDelay(2, { ...options, jitter: 0 }, () => 0.7),
    400,
  )
})

test('reconnect: the client comes back after the server restarts on the same port', async () => {
  let server = new WebSocketTransport()
  const address = await server.listen({ port: 0 })
  const port = Number(new URL(address).port)
  const echo = (transport: WebSocketTransport): void => {
    transport.events.on('connection', (c) => c.events.on('message', (f) => void c.send(f).catch(() => {})))
  }
  echo(server)
  const client = new WebSocketTransport()
  const reconnector = new Reconnector({ transport: client, address, backoff: { initialMs: 20, maxMs: 200 } })
  const failures: number[] = []
  reconnector.events.on('failure', ({ attempt }) => failures.push(attempt))
  const first = nextEvent<Connection>(reconnector.events as never, 'connection')
  reconnector.start()
  const c1 = await first
  assert.deepEqual(await roundTrip(c1, new Uint8Array([1])), new Uint8Array([1]))

  const second = nextEvent<Connection>(reconnector.events as never, 'connection')
  await server.stop()
  // the server is down for a few attempts
  while (failures.length < 2) await new Promise((resolve) => setTimeout(resolve, 10))
  server = new WebSocketTransport()
  echo(server)
  await server.listen({ port })
  const c2 = await second
  assert.notEqual(c2, c1)
  assert.deepEqual(await roundTrip(c2, new Uint8Array([2])), new Uint8Array([2]))
  assert.ok(
    failures.every((attempt, i) => i === 0 || attempt === failures[i - 1] + 1),
    'attempts count up while the server is down',
  )
  reconnector.stop()
  await client.stop()
  await server.stop()
})

test('websocket: wss with a certificate (self-signed, generated by openssl for this test)', async (t) => {
  const dir = await tempDir('concord-tls-')
  try {
    const certificate = await selfSignedCertificate(dir.path)
    if (!certificate) {
      t.skip('openssl is not available')
      return
    }
    const { key, cert } = certificate
    const server = new WebSocketTransport()
    const address = await server.listen({ port: 0, tls: { key, cert } })
    assert.ok(address.startsWith('wss://127.0.0.1:'))
    server.events.on('connection', (c) => c.events.on('message', (f) => void c.send(f).catch(() => {})))
    // an untrusted certificate is refused
    const untrusting = new WebSocketTransport()
    await assert.rejects(untrusting.dial(address), (e) => isConcordError(e, ErrorCodes.UNREACHABLE))
    // with the server's certificate as the CA it works
    const client = new WebSocketTransport({ tls: { ca: cert } })
    const connection = await client.dial(address)
    assert.deepEqual(await roundTrip(connection, new Uint8Array([7, 7])), new Uint8Array([7, 7]))
    // and so it does with the CA given to one dial
    const perDial = await untrusting.dial(address, { tls: { ca: cert } })
    assert.deepEqual(await roundTrip(perDial, new Uint8Array([8])), new Uint8Array([8]))
    await client.stop()
    await untrusting.stop()
    await server.stop()
  } finally {
    await dir.remove()
  }
})

test('websocket: the frames sent in one event-loop turn leave in one socket write, whole and in order', async () => {
  const server = new WebSocketTransport()
  const address = await server.listen({ port: 0, host: '127.0.0.1' })
  const received: Uint8Array[] = []
  const gotAll = new Promise<void>((resolve) => {
    server.events.on('connection', (c) =>
      c.events.on('message', (frame) => {
        received.push(frame)
        if (received.length === 3) resolve()
      }),
    )
  })
  const client = new WebSocketTransport()
  try {
    const connection = await client.dial(address)
    // The TCP socket under the client's WebSocket, observed (its writes counted), not replaced.
    const raw = (connection as unknown as { socket: { _socket: import('node:net').Socket } }).socket._socket
    const writes = { single: 0, vectored: 0 }
    const write = raw._write.bind(raw)
    const writev = raw._writev!.bind(raw)
    raw._write = (...args: Parameters<typeof raw._write>) => {
      writes.single++
      write(...args)
    }
    raw._writev = (...args: Parameters<NonNullable<typeof raw._writev>>) => {
      writes.vectored++
      writev(...args)
    }
    await Promise.all([connection.send(new Uint8Array([1])), connection.send(new Uint8Array([2, 2])), connection.send(new Uint8Array([3, 3, 3]))])
    await gotAll
    assert.deepEqual(received, [new Uint8Array([1]), new Uint8Array([2, 2]), new Uint8Array([3, 3, 3])])
    assert.deepEqual(writes, { single: 0, vectored: 1 }, 'one writev for the three frames')
    // A later turn's frame is a write of its own.
    await new Promise((resolve) => setImmediate(resolve))
    await connection.send(new Uint8Array([4]))
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(writes.single + writes.vectored, 2)
  } finally {
    await client.stop()
    await server.stop()
  }
})
