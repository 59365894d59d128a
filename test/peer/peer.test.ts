import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { WebSocket } from 'ws'
import * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'
import { createPeer, type Peer } from '../../peer/index.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { until } from '../helpers/wait.ts'
import { tempDir } from '../helpers/temp-dir.ts'

async function withPeers<T>(fn: (dir: string, track: (peer: Peer) => Peer) => Promise<T>): Promise<T> {
  const dir = await tempDir('concord-peer-')
  const peers: Peer[] = []
  try {
    return await fn(dir.path, (peer) => {
      peers.push(peer)
      return peer
    })
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
}

test('two peers on LevelDB over WebSocket: every type syncs live, both ways', () =>
  withPeers(async (dir, track) => {
    const a = track(await createPeer({ agentId: 'a', dir: join(dir, 'a') }))
    const b = track(await createPeer({ agentId: 'b', dir: join(dir, 'b') }))
    const { url } = await a.listen({ port: 0 })
    await b.connect(url)

    const [ca, cb] = [await a.counter('tasks'), await b.counter('tasks')]
    ca.increment(3)
    cb.increment(2)
    cb.decrement(1)
    const sa = await a.set<string>('seen')
    sa.add('x')
    sa.add('y')
    const rb = await b.register<{ step: number }>('plan')
    rb.set({ step: 3 })
    const ma = await a.map('facts')
    ma.set('k', 'v')
    ma.counter('hits').increment(5)
    const ya = await a.yjs('ctx')
    ya.doc.getText('t').insert(0, 'hello')
    const ab = await b.automerge<{ items: string[] }>('spec')
    ab.change((doc) => {
      doc.items = ['one']
    })

    await until(async () => (await b.counter('tasks')).value() === 4 && (await a.counter('tasks')).value() === 4, 'counters converge')
    await until(async () => (await b.set<string>('seen')).has('y'), 'set reaches b')
    await until(async () => JSON.stringify((await a.register('plan')).value()) === JSON.stringify({ step: 3 }), 'register reaches a')
    await until(async () => (await b.map('facts')).get('k') === 'v', 'map reaches b')
    await until(async () => (await b.yjs('ctx')).doc.getText('t').toString() === 'hello', 'yjs reaches b')
    await until(async () => JSON.stringify((await a.automerge<{ items: string[] }>('spec')).doc.items) === '["one"]', 'automerge reaches a')
    assert.deepEqual((await b.map('facts')).value(), (await a.map('facts')).value())
    // opening a name as another type is a typed error
    await assert.rejects(a.set('tasks'), (e) => isConcordError(e, ErrorCodes.TYPE_MISMATCH))
  }))

test('an offline peer writes, restarts from disk, reconnects and resyncs only what it missed', () =>
  withPeers(async (dir, track) => {
    const server = track(await createPeer({ agentId: 'server', dir: join(dir, 's') }))
    const { url } = await server.listen()
    const items = await server.set<number>('items')
    for (let i = 0; i < 2000; i++) items.add(i)

    let agent = await createPeer({ agentId: 'agent', dir: join(dir, 'agent') })
    await agent.connect(url)
    await until(async () => (await agent.set('items')).size === 2000, 'initial sync')
    const fullBytes = agent.stats().totals.bytesIn
    await agent.close()

    // offline: the agent writes; the server writes too
    agent = await createPeer({ agentId: 'agent', dir: join(dir, 'agent') })
    const offline = await agent.set<number>('items')
    assert.equal(offline.size, 2000, 'state came back from disk')
    offline.add(-1)
    offline.delete(0)
    items.add(5000)
    await agent.flush()
    await agent.close()

    agent = track(await createPeer({ agentId: 'agent', dir: join(dir, 'agent') }))
    await agent.connect(url)
    await until(async () => items.has(-1) && !items.has(0) && (await agent.set('items')).has(5000), 'resync both ways')
    const resyncBytes = agent.stats().totals.bytesIn + agent.stats().totals.bytesOut
    assert.ok(resyncBytes < fullBytes / 10, `resync exchanged ${resyncBytes} bytes, the full state took ${fullBytes}`)
    assert.deepEqual((await agent.set('items')).value(), items.value())
  }))

test('flush({ acks: 1 }) resolves once a peer persisted the writes; times out with no peer', () =>
  withPeers(async (dir, track) => {
    const a = track(await createPeer({ agentId: 'a', dir: join(dir, 'a') }))
    const { url } = await a.listen()
    const lonely = track(await createPeer({ agentId: 'lonely' }))
    const c = await lonely.counter('c')
    c.increment()
    await assert.rejects(lonely.flush({ acks: 1, timeoutMs: 200 }), (e) => isConcordError(e, ErrorCodes.TIMEOUT))

    const b = track(await createPeer({ agentId: 'b', dir: join(dir, 'b') }))
    await b.connect(url)
    const counter = await b.counter('acked')
    counter.increment(7)
    await b.flush({ acks: 1 })
    // a has persisted it: its store reads it back without any further sync
    assert.equal((await a.counter('acked')).value(), 7)
    const history = await a.history('acked')
    assert.equal(history.length, 1)
    assert.equal(history[0].agent, 'b')
  }))

test('wrong credentials are refused before any data flows; read-only peers cannot write', () =>
  withPeers(async (dir, track) => {
    const server = track(
      await createPeer({
        agentId: 'server',
        dir: join(dir, 's'),
        auth: { accept: { writer: 'w-secret', reader: 'r-secret' } },
        access: (peer) => (peer === 'writer' ? 'write' : 'read'),
      }),
    )
    const { url } = await server.listen()
    const secret = await server.register<string>('secret')
    secret.set('classified')

    const intruder = track(await createPeer({ agentId: 'writer', auth: { token: 'wrong' } }))
    await assert.rejects(intruder.connect(url), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
    assert.deepEqual(
      (await intruder.names()).map((n) => n.name),
      [],
      'no data reached the refused peer',
    )

    const reader = track(await createPeer({ agentId: 'reader', auth: { token: 'r-secret' } }))
    await reader.connect(url)
    await until(async () => (await reader.names()).some((n) => n.name === 'secret'), 'reader receives')
    assert.equal((await reader.register('secret')).value(), 'classified')
    const rc = await reader.register<string>('secret')
    rc.set('tampered')
    const writer = track(await createPeer({ agentId: 'writer', auth: { token: 'w-secret' } }))
    await writer.connect(url)
    const wc = await writer.counter('ok')
    wc.increment()
    await until(async () => (await server.counter('ok')).value() === 1, 'writer accepted')
    assert.equal((await server.register('secret')).value(), 'classified', 'the read-only write was refused')
    assert.ok(
      (await server.history('secret')).every((r) => r.agent === 'server'),
      'and never persisted',
    )
  }))

test('a stock y-websocket client edits a peer Yjs document, persisted and synced onward to Concord peers', () =>
  withPeers(async (dir, track) => {
    const hub = track(await createPeer({ agentId: 'hub', dir: join(dir, 'hub') }))
    const { port, url } = await hub.listen()
    const other = track(await createPeer({ agentId: 'other', dir: join(dir, 'other') }))
    await other.connect(url)
    const doc = new Y.Doc()
    const provider = new WebsocketProvider(`ws://127.0.0.1:${port}/yjs`, 'notes', doc, { WebSocketPolyfill: WebSocket as never, disableBc: true })
    try {
      await until(() => provider.synced, 'y-websocket synced')
      doc.getText('body').insert(0, 'from the browser')
      await until(async () => (await other.yjs('notes')).doc.getText('body').toString() === 'from the browser', 'edit reaches the other Concord peer')
      await hub.flush() // a hub relays a remote commit once applied, before its record is durable
      assert.ok((await hub.history('notes')).length >= 1, 'persisted by the hub')
      const mine = await other.yjs('notes')
      mine.doc.getText('body').insert(0, '>> ')
      await until(() => doc.getText('body').toString() === '>> from the browser', 'Concord edit reaches the y-websocket client')
    } finally {
      provider.destroy()
      doc.destroy()
    }
  }))
