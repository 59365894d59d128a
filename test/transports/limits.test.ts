/**
 * Limits of the listeners, over real sockets on 127.0.0.x: WebSocket
 * connections in all and per address (503 beyond), the upgrade deadline
 * (408), the frame timeout; libp2p's per-address cap on inbound connections;
 * the libp2p frame decoder, which allocates what arrived and not what a
 * length prefix announced.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { connect, type Socket } from 'node:net'
import { WebSocket } from 'ws'
import { FrameDecoder } from '../../transports/libp2p/frame-codec.ts'
import type { Connection } from '../../transports/transport.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { until } from '../helpers/wait.ts'
import { NodeSet } from './libp2p-helpers.ts'

const upgradeRequest = (port: number, path = '/concord'): string =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'

/** A raw socket from `localAddress` that sends `text` (at once, or nothing); resolves what it read once closed. */
function socketFrom(port: number, localAddress: string, text = ''): { socket: Socket; read: () => string; closed: Promise<string> } {
  const socket = connect({ port, host: '127.0.0.1', localAddress })
  let read = ''
  socket.on('data', (data) => {
    read += data.toString('latin1')
  })
  socket.on('error', () => {})
  if (text) socket.on('connect', () => socket.write(text))
  return { socket, read: () => read, closed: new Promise((resolve) => socket.once('close', () => resolve(read))) }
}

test('websocket listener: connections beyond the total or per-address limit are answered 503 (every path counts), and a closed one frees its slot', async () => {
  const transport = new WebSocketTransport()
  const url = await transport.listen({ port: 0, maxConnections: 4, maxConnectionsPerAddress: 2 })
  const port = Number(new URL(url).port)
  // A route that reads its socket and closes it when the client does (as a real one must).
  transport.route('/other', (_request, socket) => {
    socket.on('error', () => {})
    socket.on('end', () => socket.destroy())
    socket.resume()
  })
  const sockets: Socket[] = []
  try {
    const connections: Connection[] = []
    transport.events.on('connection', (connection) => connections.push(connection))
    const a1 = socketFrom(port, '127.0.0.2', upgradeRequest(port))
    const a2 = socketFrom(port, '127.0.0.2', upgradeRequest(port, '/other/x'))
    sockets.push(a1.socket, a2.socket)
    await until(() => a1.read().startsWith('HTTP/1.1 101') && transport.listenerStats!.open === 2, 'two from 127.0.0.2 admitted')
    // A third from the same address: 503, whatever the path.
    const a3 = socketFrom(port, '127.0.0.2', upgradeRequest(port))
    sockets.push(a3.socket)
    assert.match(await a3.closed, /^HTTP\/1\.1 503 Service Unavailable\r\n[\s\S]*Retry-After: 5[\s\S]*limit per address/)
    // Two more from other addresses fill the total; the next is refused for the total.
    const b1 = socketFrom(port, '127.0.0.3', upgradeRequest(port))
    const c1 = socketFrom(port, '127.0.0.4', upgradeRequest(port))
    sockets.push(b1.socket, c1.socket)
    await until(() => transport.listenerStats!.open === 4, 'four held')
    const d1 = socketFrom(port, '127.0.0.5', upgradeRequest(port))
    sockets.push(d1.socket)
    assert.match(await d1.closed, /^HTTP\/1\.1 503[\s\S]*its limit/)
    assert.deepEqual({ ...transport.listenerStats }, { open: 4, refusedTotal: 1, refusedPerAddress: 1 })
    // A stock ws client sees the 503 as an unexpected response.
    const client = new WebSocket(url, { localAddress: '127.0.0.6' })
    client.on('error', () => {})
    const status = await new Promise<number>((resolve) => client.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0)))
    assert.equal(status, 503)
    client.terminate()
    // One closes: its slot is free again.
    b1.socket.destroy()
    await until(() => transport.listenerStats!.open === 3, 'the slot is released')
    const e1 = socketFrom(port, '127.0.0.7', upgradeRequest(port))
    sockets.push(e1.socket)
    await until(() => e1.read().startsWith('HTTP/1.1 101'), 'admitted again')
  } finally {
    for (const socket of sockets) socket.destroy()
    await transport.stop()
  }
})

test('websocket listener: a socket that sends nothing, or trickles its upgrade request, is answered 408 at the upgrade deadline', async () => {
  const transport = new WebSocketTransport()
  const url = await transport.listen({ port: 0, upgradeTimeoutMs: 400 })
  const port = Number(new URL(url).port)
  try {
    const silent = socketFrom(port, '127.0.0.2')
    const partial = socketFrom(port, '127.0.0.2', 'GET /conc')
    const request = upgradeRequest(port)
    const slow = socketFrom(port, '127.0.0.3')
    let sent = 0
    const drip = setInterval(() => {
      if (sent < request.length && !slow.socket.destroyed) slow.socket.write(request[sent++])
    }, 50)
    const outcomes = await Promise.all([silent.closed, partial.closed, slow.closed])
    clearInterval(drip)
    for (const read of outcomes) assert.match(read, /^HTTP\/1\.1 408 Request Timeout/)
    assert.ok(sent < request.length, 'the trickled request was cut off')
    // The server frees a slot on its own close event, which may come a turn after the client saw the 408 and the close.
    await until(() => transport.listenerStats!.open === 0, 'every slot freed')
    // A prompt client is unaffected.
    const ok = new WebSocket(url)
    await new Promise((resolve, reject) => {
      ok.once('open', resolve)
      ok.once('error', reject)
    })
    ok.terminate()
  } finally {
    await transport.stop()
  }
})

test('websocket listener: an inbound frame sent byte by byte ends the connection at the frame timeout; whole frames and idle links do not', async () => {
  const transport = new WebSocketTransport({ frameTimeoutMs: 300, heartbeatIntervalMs: 0 })
  const url = await transport.listen({ port: 0 })
  const closes: string[] = []
  const received: number[] = []
  transport.events.on('connection', (connection) => {
    connection.events.on('message', (frame) => received.push(frame.length))
    connection.events.once('close', ({ reason }) => closes.push(reason ?? ''))
  })
  try {
    // An honest client: a frame, then silence for well past the timeout.
    const honest = new WebSocket(url)
    await new Promise((resolve) => honest.once('open', resolve))
    honest.send(new Uint8Array(1000))
    await until(() => received.length === 1, 'the frame arrives')
    await new Promise((resolve) => setTimeout(resolve, 900))
    assert.deepEqual(closes, [], 'an idle connection whose last frame was whole stays')
    // A frame of 100 bytes, masked as a client must, one byte every 100 ms.
    const slow = new WebSocket(url)
    await new Promise((resolve) => slow.once('open', resolve))
    const raw = (slow as unknown as { _socket: Socket })._socket
    const bytes = Buffer.concat([Buffer.from([0x82, 0x80 | 100, 0, 0, 0, 0]), Buffer.alloc(100)])
    let at = 0
    const drip = setInterval(() => {
      if (at < bytes.length && !raw.destroyed) raw.write(bytes.subarray(at, ++at))
    }, 100)
    await until(() => closes.length === 1, 'the slow frame ends its connection')
    clearInterval(drip)
    assert.match(closes[0], /frame timeout/)
    assert.ok(at < bytes.length)
    assert.equal(received.length, 1)
    honest.terminate()
    slow.terminate()
  } finally {
    await transport.stop()
  }
})

test('websocket listener on a server passed in: upgrades are counted and refused with 503 over the limit', async () => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const transport = new WebSocketTransport()
  const url = await transport.listen({ server, maxConnectionsPerAddress: 1 })
  try {
    const first = new WebSocket(url)
    await new Promise((resolve) => first.once('open', resolve))
    const second = new WebSocket(url)
    second.on('error', () => {})
    const status = await new Promise<number>((resolve) => second.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0)))
    assert.equal(status, 503)
    first.terminate()
    second.terminate()
  } finally {
    await transport.stop()
    await new Promise((resolve) => server.close(resolve))
  }
})

test('libp2p: inbound connections beyond the per-address cap are dropped before Noise; others still connect', { timeout: 60_000 }, async () => {
  const nodes = new NodeSet()
  try {
    const { transport, address } = await nodes.listening({ limits: { maxConnectionsPerAddress: 2, inboundUpgradeTimeoutMs: 30_000 } })
    const port = Number(/\/tcp\/(\d+)/.exec(address)![1])
    // Raw TCP sockets that never start Noise: two are held (upgrading), the third is dropped at once.
    const held = [socketFrom(port, '127.0.0.2'), socketFrom(port, '127.0.0.2')]
    await until(() => transport.addressLimit.openFrom('127.0.0.2') === 2, 'two held')
    const third = socketFrom(port, '127.0.0.2')
    await third.closed
    assert.equal(transport.addressLimit.refused, 1)
    assert.ok(
      held.every((s) => !s.socket.destroyed),
      'the first two are still upgrading',
    )
    // A real peer from another address connects.
    const other = nodes.create({ autoConnect: false })
    const connection = await other.dial(address)
    assert.ok(connection.open)
    // Closing one of the held sockets frees its slot.
    held[0].socket.destroy()
    await until(() => transport.addressLimit.openFrom('127.0.0.2') === 1, 'the slot is released')
    for (const s of held) s.socket.destroy()
  } finally {
    await nodes.stopAll()
  }
})

test('libp2p frame decoder: a length prefix announcing 16 MiB allocates what arrived, not 16 MiB', () => {
  const before = process.memoryUsage().arrayBuffers
  const decoders: FrameDecoder[] = []
  for (let i = 0; i < 40; i++) {
    const decoder = new FrameDecoder(16 * 1024 * 1024)
    // varuint(16 MiB) then four bytes of the body
    assert.deepEqual(decoder.push(new Uint8Array([0x80, 0x80, 0x80, 0x08, 1, 2, 3, 4])), [])
    assert.equal(decoder.bufferedBytes, 4)
    decoders.push(decoder)
  }
  const grown = (process.memoryUsage().arrayBuffers - before) / (1 << 20)
  assert.ok(grown < 32, `array buffers grew by ${grown.toFixed(1)} MiB for 40 announced 16 MiB frames`)
  // Trickled one byte at a time, a frame still arrives whole, with at most twice its bytes held (plus 64 KiB).
  const decoder = new FrameDecoder(1 << 20)
  const body = new Uint8Array(200_000).map((_, i) => i % 251)
  const wire = new Uint8Array([0xc0, 0x9a, 0x0c, ...body])
  let frames: Uint8Array[] = []
  for (let i = 0; i < wire.length; i += 997) frames = frames.concat(decoder.push(wire.subarray(i, i + 997)))
  assert.equal(frames.length, 1)
  assert.deepEqual(frames[0], body)
  void decoders
})
