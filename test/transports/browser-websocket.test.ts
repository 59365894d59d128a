/**
 * The browser's WebSocket transport, run in Node over `ws`'s WHATWG-compatible
 * WebSocket class against the real `ws` server (the same code runs over
 * Chromium's WebSocket in test/browser/). The conformance suite, then what
 * a browser client must get right on its own: text and oversized frames end
 * only that connection, failed dials are typed, and it cannot listen.
 */
import { test, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { WebSocket, WebSocketServer } from 'ws'
import { isConcordError } from '../../crdt/errors.ts'
import { BrowserWebSocketTransport, type WebSocketLikeConstructor } from '../../transports/browser-websocket/index.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { runTransportTests } from '../../testing/index.ts'

const WS = WebSocket as unknown as WebSocketLikeConstructor

runTransportTests({ describe, it }, 'browser-websocket (client) against the ws server', async () => {
  const server = new WebSocketTransport()
  const address = await server.listen({ port: 0, host: '127.0.0.1' })
  const client = new BrowserWebSocketTransport({ WebSocket: WS })
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

/** A raw ws server that does what a test says with each connection. */
async function rawServer(onConnection: (socket: WebSocket) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
  wss.on('connection', onConnection)
  const { port } = wss.address() as { port: number }
  return {
    url: `ws://127.0.0.1:${port}/concord`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate()
        wss.close(() => resolve())
      }),
  }
}

test('browser-websocket: a text frame or a frame over maxPayload ends that connection only', async () => {
  const server = await rawServer((socket) => {
    socket.on('message', (data) => {
      const command = data.toString()
      if (command === 'text') socket.send('hello')
      else if (command === 'big') socket.send(new Uint8Array(2048), { binary: true })
      else socket.send(Uint8Array.of(7), { binary: true })
    })
  })
  try {
    const transport = new BrowserWebSocketTransport({ WebSocket: WS, maxPayload: 1024 })
    const ask = async (command: string): Promise<{ frames: number; reason?: string }> => {
      const connection = await transport.dial(server.url)
      let frames = 0
      connection.events.on('message', () => {
        frames++
      })
      const closed = new Promise<{ reason?: string }>((resolve) => connection.events.once('close', resolve))
      await connection.send(new TextEncoder().encode(command))
      const outcome = await Promise.race([closed, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 300))])
      connection.close()
      return { frames, reason: outcome?.reason }
    }
    assert.match((await ask('text')).reason ?? '', /text frame/)
    assert.match((await ask('big')).reason ?? '', /over the limit of 1024/)
    const ok = await ask('small')
    assert.equal(ok.frames, 1)
    assert.equal(ok.reason, undefined)
    await transport.stop()
  } finally {
    await server.close()
  }
})

test('browser-websocket: dial failures are typed; a stopped transport and an aborted dial reject; it cannot listen', async () => {
  const transport = new BrowserWebSocketTransport({ WebSocket: WS })
  assert.equal('listen' in transport, false)
  // Nothing listens on port 1.
  await assert.rejects(transport.dial('ws://127.0.0.1:1/concord'), (e) => isConcordError(e, 'CONCORD_UNREACHABLE') && /cannot reach/.test(e.message))
  await assert.rejects(transport.dial('http://127.0.0.1:1/concord'), (e) => isConcordError(e, 'CONCORD_INVALID_ARGUMENT'))
  await assert.rejects(transport.dial('ws://user:secret@127.0.0.1:1/concord'), (e) => isConcordError(e, 'CONCORD_INVALID_ARGUMENT'))
  await assert.rejects(transport.dial('ws://127.0.0.1:1/concord', { signal: AbortSignal.abort() }), (e) => isConcordError(e, 'CONCORD_ABORTED'))
  // A server that never finishes the upgrade: the dial times out.
  const { createServer } = await import('node:net')
  const silent = createServer(() => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const port = (silent.address() as { port: number }).port
  try {
    const slow = new BrowserWebSocketTransport({ WebSocket: WS, dialTimeoutMs: 200 })
    await assert.rejects(slow.dial(`ws://127.0.0.1:${port}/concord`), (e) => isConcordError(e, 'CONCORD_UNREACHABLE') && /within 200 ms/.test(e.message))
    const controller = new AbortController()
    const dialing = slow.dial(`ws://127.0.0.1:${port}/concord`, { signal: controller.signal })
    controller.abort()
    await assert.rejects(dialing, (e) => isConcordError(e, 'CONCORD_ABORTED'))
  } finally {
    silent.close()
  }
  const noGlobal = new BrowserWebSocketTransport({ WebSocket: undefined })
  if ((globalThis as { WebSocket?: unknown }).WebSocket === undefined) {
    await assert.rejects(noGlobal.dial('ws://127.0.0.1:1/concord'), (e) => isConcordError(e, 'CONCORD_INVALID_ARGUMENT') && /no WebSocket/.test(e.message))
  }
  await transport.stop()
  await assert.rejects(transport.dial('ws://127.0.0.1:1/concord'), (e) => isConcordError(e, 'CONCORD_CLOSED'))
})
