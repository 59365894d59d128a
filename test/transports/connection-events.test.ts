import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConnectionEmitter } from '../../transports/connection-events.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'

test('frames that arrive before the first listener are held and delivered in order', async () => {
  const events = new ConnectionEmitter()
  events.deliver(new Uint8Array([1]))
  events.deliver(new Uint8Array([2]))
  const got: number[] = []
  events.on('message', (frame) => got.push(frame[0]))
  assert.deepEqual(got, [], 'delivered after the caller finished wiring, not inside on()')
  events.deliver(new Uint8Array([3]))
  await Promise.resolve()
  await Promise.resolve()
  assert.deepEqual(got.sort(), [1, 2, 3])
})

test('over WebSocket: a frame the server sends on accept reaches a client that subscribes after dial', async () => {
  const server = new WebSocketTransport()
  const client = new WebSocketTransport()
  server.events.on('connection', (connection) => {
    void connection.send(new Uint8Array([42]))
  })
  try {
    const url = await server.listen({ port: 0 })
    const connection = await client.dial(url)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const frame = await new Promise<Uint8Array>((resolve) => connection.events.on('message', resolve))
    assert.deepEqual([...frame], [42])
  } finally {
    await client.stop()
    await server.stop()
  }
})
