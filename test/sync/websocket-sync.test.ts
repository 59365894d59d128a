import { test } from 'node:test'
import assert from 'node:assert/strict'
import { attachSession } from '../../sync/attach.ts'
import { agentId } from '../../crdt/agent-id.ts'
import type { SessionOptions, SyncSession } from '../../sync/session.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { Reconnector } from '../../transports/reconnect.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { MemoryHost, mutate } from './helpers/memory-host.ts'
import { handshake, rawClient } from '../helpers/raw-client.ts'

/** Waits until `condition()` holds (polling; the test's own timeout guards against a hang). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

function serve(transport: WebSocketTransport, host: MemoryHost, options: Partial<SessionOptions> = {}): SyncSession[] {
  const sessions: SyncSession[] = []
  transport.events.on('connection', (connection) => {
    sessions.push(attachSession(connection, host, { agentId: agentId(host.id), ...options }))
  })
  return sessions
}

const same = (a: MemoryHost, b: MemoryHost): boolean => JSON.stringify(a.values()) === JSON.stringify(b.values())

test('sync over WebSocket: live sync, offline edits, server restart, reconnect and resync', { timeout: 30_000 }, async () => {
  const random = new Prng(1)
  const server = new MemoryHost('server', { token: 'secret' })
  const client = new MemoryHost('client')
  let transport = new WebSocketTransport()
  const address = await transport.listen({ port: 0 })
  const port = Number(new URL(address).port)
  serve(transport, server)

  const dialer = new WebSocketTransport()
  const reconnector = new Reconnector({ transport: dialer, address, backoff: { initialMs: 20, maxMs: 200 } })
  const sessions: SyncSession[] = []
  reconnector.events.on('connection', (connection) => {
    sessions.push(attachSession(connection, client, { agentId: agentId('client'), token: 'secret' }))
  })
  reconnector.start()
  mutate(client.open('doc', 'yjs'), random, 'hello')
  mutate(server.open('spec', 'automerge'), random, 'spec')
  await until(() => sessions.length >= 1 && same(client, server) && client.replicas.size === 2)

  // live, with an ack that means "persisted over there"
  mutate(client.replicas.get('doc')!, random, 'live')
  await sessions.at(-1)!.whenAcked()
  assert.ok(same(client, server))

  // the server goes away; the client keeps working offline
  await transport.stop()
  await until(() => sessions.every((s) => s.state === 'closed'))
  for (let i = 0; i < 5; i++) mutate(client.replicas.get('doc')!, random, `offline${i}`)
  mutate(server.open('server-notes', 'yjs'), random, 'server-side')
  assert.ok(!same(client, server))

  // the server comes back on the same port: reconnect, resync both ways
  transport = new WebSocketTransport()
  serve(transport, server)
  await transport.listen({ port })
  await until(() => sessions.length >= 2 && sessions.at(-1)!.state === 'open')
  await until(() => same(client, server))
  const resumed = sessions.at(-1)!
  await resumed.whenAcked()
  assert.equal(resumed.stats.commitsOut, 1, 'only the document that changed offline was sent')

  reconnector.stop()
  await dialer.stop()
  await transport.stop()
})

test('sync over WebSocket: a peer sending garbage is disconnected; a wrong token is refused; good peers are unaffected', { timeout: 30_000 }, async () => {
  const random = new Prng(2)
  const server = new MemoryHost('server', { token: 'secret' })
  const transport = new WebSocketTransport()
  const address = await transport.listen({ port: 0 })
  const serverSessions = serve(transport, server, { maxMalformed: 3 })

  const good = new MemoryHost('good')
  const dialer = new WebSocketTransport()
  const goodSession = attachSession(await dialer.dial(address), good, { agentId: agentId('good'), token: 'secret' })
  await until(() => goodSession.state === 'open')

  // a raw client that completes the handshake (protocol 2: its AUTH proves the secret), then sends garbage
  // (before the handshake, a frame other than HELLO and AUTH closes the connection undecoded)
  const raw = await rawClient(address)
  await handshake(raw, 'raw', 'secret')
  for (let i = 0; i < 10; i++) raw.send(new Uint8Array([1, 5, 0xff, 0xff]))
  await raw.closed
  const received = raw.received.map((m) => (m.type === 'refuse' ? `refuse:${m.reason}` : m.type))
  assert.ok(received.includes('refuse:protocol'), received.join())

  // a wrong token: refused before any data
  const intruder = new MemoryHost('intruder')
  mutate(intruder.open('evil', 'yjs'), random, 'x')
  const intruderSession = attachSession(await dialer.dial(address), intruder, { agentId: agentId('intruder'), token: 'guess' })
  const refused = new Promise<string>((resolve) => intruderSession.events.on('refused', (r) => resolve(`${r.by}:${r.reason}`)))
  assert.equal(await refused, 'remote:auth')
  await until(() => intruderSession.state === 'closed')
  assert.ok(!server.replicas.has('evil'))
  assert.equal(intruder.replicas.size, 1)

  // the good peer still syncs
  mutate(good.open('notes', 'yjs'), random, 'still here')
  await goodSession.whenAcked()
  assert.ok(same(good, server))
  assert.equal(goodSession.state, 'open')
  assert.ok(serverSessions.some((s) => s.stats.malformed > 3))

  await dialer.stop()
  await transport.stop()
})
