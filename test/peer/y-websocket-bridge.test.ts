import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WebSocket, WebSocketServer } from 'ws'
import * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'
import { YWebsocketBridge, type YjsRoom, type YWebsocketClient } from '../../peer/y-websocket-bridge.ts'

/**
 * A room over a plain Y.Doc that records what it was asked to persist; an
 * update applied here (or by `edit`) is published to the room's clients at
 * once, as the peer's durable `committed` units are.
 */
function memoryRoom(doc: Y.Doc, persisted: Uint8Array[], bridge: () => YWebsocketBridge, name: string): YjsRoom {
  return {
    stateVector: () => Y.encodeStateVector(doc),
    updateSince: (stateVector) => Y.encodeStateAsUpdate(doc, stateVector),
    durable: async () => undefined,
    async admit(update, client) {
      persisted.push(update)
      Y.applyUpdate(doc, update, client)
      bridge().publish(name, update, client)
      return 'applied'
    },
    release() {},
  }
}

const writer: YWebsocketClient = { remoteAgentId: 'writer', access: 'write' }

async function startServer(bridge: YWebsocketBridge) {
  const http = createServer()
  const wss = new WebSocketServer({ noServer: true })
  http.on('upgrade', (request, socket, head) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    if (!path.startsWith('/yjs/')) {
      socket.destroy()
      return
    }
    wss.handleUpgrade(request, socket, head, (ws) => bridge.handle(ws, decodeURIComponent(path.slice(5)), { ...writer }))
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const { port } = http.address() as AddressInfo
  return {
    url: `ws://127.0.0.1:${port}/yjs`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate()
        wss.close()
        http.close(() => resolve())
        http.closeAllConnections()
      }),
  }
}

function until(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const tick = () => {
      if (predicate()) return resolve()
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`))
      setTimeout(tick, 10)
    }
    tick()
  })
}

test('a stock y-websocket client syncs both ways through the bridge, updates persisted first', async () => {
  const serverDoc = new Y.Doc()
  serverDoc.getText('t').insert(0, 'server says hi. ')
  const persisted: Uint8Array[] = []
  const bridge: YWebsocketBridge = new YWebsocketBridge({
    openRoom: async (name) => {
      assert.equal(name, 'notes')
      return memoryRoom(serverDoc, persisted, () => bridge, name)
    },
  })
  const server = await startServer(bridge)
  const docA = new Y.Doc()
  const docB = new Y.Doc()
  const a = new WebsocketProvider(server.url, 'notes', docA, { WebSocketPolyfill: WebSocket as never, disableBc: true })
  const b = new WebsocketProvider(server.url, 'notes', docB, { WebSocketPolyfill: WebSocket as never, disableBc: true })
  try {
    await until(() => a.synced && b.synced, 'both clients synced')
    assert.equal(docA.getText('t').toString(), 'server says hi. ')
    docA.getText('t').insert(docA.getText('t').length, 'A was here. ')
    await until(() => docB.getText('t').toString().includes('A was here.'), 'B sees A')
    assert.ok(serverDoc.getText('t').toString().includes('A was here.'))
    assert.ok(persisted.length > 0)
    serverDoc.once('update', (update: Uint8Array) => bridge.publish('notes', update))
    serverDoc.getText('t').insert(0, '>> ')
    await until(() => docA.getText('t').toString().startsWith('>> ') && docB.getText('t').toString().startsWith('>> '), 'server edit reaches both')
    // awareness relays between clients
    a.awareness.setLocalStateField('user', { name: 'alice' })
    await until(() => [...b.awareness.getStates().values()].some((s) => (s as { user?: { name: string } }).user?.name === 'alice'), 'awareness relayed')
  } finally {
    a.destroy()
    b.destroy()
    docA.destroy()
    docB.destroy()
    bridge.close()
    await server.close()
  }
})

test('malformed messages are counted and dropped; a client that keeps sending them is disconnected, others unaffected', async () => {
  const doc = new Y.Doc()
  const bridge: YWebsocketBridge = new YWebsocketBridge({ openRoom: async (name) => memoryRoom(doc, [], () => bridge, name), maxBadMessages: 3 })
  const server = await startServer(bridge)
  const good = new Y.Doc()
  const provider = new WebsocketProvider(server.url, 'r', good, { WebSocketPolyfill: WebSocket as never, disableBc: true })
  const bad = new WebSocket(`${server.url}/r`)
  const opened = new Promise((resolve) => bad.once('open', resolve))
  try {
    await until(() => provider.synced, 'good client synced')
    await opened
    const closed = new Promise<number>((resolve) => bad.once('close', (code) => resolve(code)))
    bad.send(new Uint8Array([0, 2, 0xff, 0xff, 0xff, 0xff, 0x0f])) // sync update claiming a huge length
    bad.send(new Uint8Array([9, 9, 9])) // unknown message type
    bad.send(new Uint8Array([0, 7, 0])) // unknown sync message type
    bad.send(new Uint8Array([]))
    bad.send(new Uint8Array([0]))
    assert.equal(await closed, 1008)
    assert.ok(bridge.stats.malformedDropped >= 4)
    good.getText('t').insert(0, 'still fine')
    await until(() => doc.getText('t').toString() === 'still fine', 'good client unaffected')
  } finally {
    provider.destroy()
    good.destroy()
    bad.terminate()
    bridge.close()
    await server.close()
  }
})
