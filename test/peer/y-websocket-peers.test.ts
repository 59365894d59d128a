/**
 * y-websocket clients are peers: stock `WebsocketProvider` clients against
 * real Concord peers (LevelDB folders, sockets on 127.0.0.1). Credentials
 * are checked at the upgrade (401 before any room is opened), access per
 * room applies (`none` refused exactly as a room that does not exist; a
 * reader's edits dropped, counted, never persisted; no name created by a
 * client that may not write), each client's edits carry its own agent id,
 * clients are sent the hub's own changes only once durable (other clients'
 * as soon as applied), and awareness is bounded and never persisted.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { WebSocket } from 'ws'
import * as Y from 'yjs'
import { Encoder } from '../../crdt/codec.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { GatedStorage } from '../helpers/held-storage.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { rawUpgrade, yClient, type WireLog } from './helpers/y-websocket-clients.ts'

interface Hub {
  peer: Peer
  port: number
  base: string
}

/** Runs `fn` with a LevelDB peer listening (y-websocket on); closes everything after. */
async function withHub(
  options: Partial<PeerOptions>,
  fn: (hub: Hub, cleanup: (close: () => void) => void) => Promise<void>,
  listen: Parameters<Peer['listen']>[0] = {},
): Promise<void> {
  const dir = await tempDir('concord-yws-')
  const cleanups: Array<() => void> = []
  const peer = await createPeer({ agentId: 'hub', dir: join(dir.path, 'hub'), ...options })
  try {
    const { port } = (await peer.listen(listen as never)) as unknown as { port: number }
    await fn({ peer, port, base: `ws://127.0.0.1:${port}/yjs` }, (close) => cleanups.push(close))
  } finally {
    for (const close of cleanups) close()
    await peer.close()
    await dir.remove()
  }
}

function client(hub: Hub, room: string, options: Parameters<typeof yClient>[3], cleanup: (close: () => void) => void) {
  const doc = new Y.Doc()
  const { provider, log } = yClient(hub.base, room, doc, options)
  cleanup(() => {
    provider.destroy()
    doc.destroy()
  })
  return { doc, provider, log }
}

const text = (doc: Y.Doc) => doc.getText('t').toString()
const refusedWith = (log: WireLog, status: number) => log.errors.some((message) => message.includes(`${status}`))

test('y-websocket on a peer that requires tokens: no credentials or wrong ones are refused at the upgrade (401) and read, edit, create nothing; a token in params or a Bearer header syncs', () =>
  withHub({ auth: { accept: { alice: 'a-secret', bob: 'b-secret' } } }, async (hub, cleanup) => {
    const notes = await hub.peer.yjs('notes')
    notes.doc.getText('t').insert(0, 'secret notes')
    await hub.peer.flush()

    const anonymous = client(hub, 'notes', {}, cleanup)
    const wrong = client(hub, 'notes', { params: { peer: 'alice', token: 'guess' } }, cleanup)
    const creator = client(hub, 'fresh-room', {}, cleanup)
    const impostor = client(hub, 'notes', { params: { peer: 'hub', token: 'a-secret' } }, cleanup)
    anonymous.doc.getText('t').insert(0, 'anonymous edit')
    await until(() => [anonymous, wrong, creator, impostor].every((c) => refusedWith(c.log, 401)), 'every client without valid credentials refused with 401')
    for (const c of [anonymous, wrong, creator, impostor]) {
      assert.equal(c.provider.synced, false)
      assert.deepEqual(c.log.received, [], 'not one byte of a room reached a refused client')
    }
    assert.equal(text(anonymous.doc), 'anonymous edit', 'it read nothing')
    assert.equal(text(notes.doc), 'secret notes', 'it edited nothing')
    assert.deepEqual(
      (await hub.peer.names()).map((n) => n.name),
      ['notes'],
      'it created nothing',
    )
    assert.ok(hub.peer.stats().yWebsocket!.refusedCredentials >= 4)

    // the token in the URL (what a browser can send), the agent id beside it
    const alice = client(hub, 'notes', { params: { peer: 'alice', token: 'a-secret' } }, cleanup)
    // the token in an Authorization header (a Node client), the agent id in X-Concord-Peer
    const bob = client(hub, 'notes', { headers: { Authorization: 'Bearer b-secret', 'X-Concord-Peer': 'bob' } }, cleanup)
    await until(() => alice.provider.synced && bob.provider.synced, 'both authenticated clients synced')
    await until(() => text(alice.doc) === 'secret notes' && text(bob.doc) === 'secret notes', 'they read the document')
    alice.doc.getText('t').insert(0, 'A ')
    await until(() => text(notes.doc) === 'A secret notes' && text(bob.doc) === 'A secret notes', "alice's edit reaches the hub and bob")
    bob.doc.getText('t').insert(text(bob.doc).length, ' B')
    await until(() => text(alice.doc) === 'A secret notes B', "bob's edit reaches alice")
    // Relayed once applied; logged once its write is done.
    await hub.peer.flush()
    const agents = new Set((await hub.peer.history('notes')).map((record) => record.agent))
    assert.deepEqual([...agents].sort(), ['alice', 'bob', 'hub'], 'each edit is logged with its author')
  }))

test('y-websocket access per room: none is refused byte for byte as a room that does not exist; a reader gets the document, its edits are dropped, counted, never persisted or relayed; only a writer creates a room', () =>
  withHub(
    {
      auth: { accept: { reader: 'r', writer: 'w', outsider: 'o' } },
      access: (peer, name) => {
        if (name.startsWith('private/')) return peer === 'writer' ? 'write' : 'none'
        return peer === 'writer' ? 'write' : 'read'
      },
    },
    async (hub, cleanup) => {
      ;(await hub.peer.yjs('private/plan')).doc.getText('t').insert(0, 'the plan')
      ;(await hub.peer.yjs('shared')).doc.getText('t').insert(0, 'for all')
      ;(await hub.peer.counter('tally')).increment()
      await hub.peer.flush()
      const names = async () => (await hub.peer.names()).map((n) => n.name).sort()
      const before = await names()

      const as = (peer: string, token: string) => ({ Authorization: `Bearer ${token}`, 'X-Concord-Peer': peer })
      const existing = await rawUpgrade(hub.port, '/yjs/private/plan', as('outsider', 'o'))
      const absent = await rawUpgrade(hub.port, '/yjs/private/nothing-here', as('outsider', 'o'))
      const noRoute = await rawUpgrade(hub.port, '/nothing-here', as('outsider', 'o'))
      assert.match(existing, /^HTTP\/1\.1 404 /)
      assert.equal(existing, absent, 'a room it may not read answers exactly as one that does not exist')
      assert.equal(existing, noRoute, 'and exactly as a path the peer does not serve')
      assert.match(await rawUpgrade(hub.port, '/yjs/private/plan', as('writer', 'w')), /^HTTP\/1\.1 101 /, 'the writer may open it')
      assert.match(await rawUpgrade(hub.port, '/yjs/brand-new', as('reader', 'r')), /^HTTP\/1\.1 404 /, 'a reader cannot create a room')
      assert.match(await rawUpgrade(hub.port, '/yjs/tally', as('writer', 'w')), /^HTTP\/1\.1 409 /, 'a name of another type')
      assert.match(await rawUpgrade(hub.port, '/yjs/private/plan'), /^HTTP\/1\.1 401 /, 'no credentials: 401 before any name is looked up')

      const outsider = client(hub, 'private/plan', { headers: as('outsider', 'o') }, cleanup)
      const reader = client(hub, 'shared', { headers: as('reader', 'r') }, cleanup)
      const writer = client(hub, 'shared', { headers: as('writer', 'w') }, cleanup)
      await until(() => refusedWith(outsider.log, 404), 'the outsider refused')
      await until(() => reader.provider.synced && writer.provider.synced && text(reader.doc) === 'for all', 'the reader gets the document')
      assert.equal(text(outsider.doc), '')

      const dropped = hub.peer.stats().yWebsocket!.updatesDropped
      reader.doc.getText('t').insert(0, 'vandal ')
      await until(() => hub.peer.stats().yWebsocket!.updatesDropped > dropped, "the reader's edit dropped and counted")
      writer.doc.getText('t').insert(text(writer.doc).length, ' (signed)')
      await until(() => text(reader.doc) === 'vandal for all (signed)', "the writer's edit reaches the reader")
      const shared = await hub.peer.yjs('shared')
      assert.equal(text(shared.doc), 'for all (signed)', "the reader's edit never reached the document")
      assert.equal(text(writer.doc), 'for all (signed)', 'nor another client')
      await hub.peer.flush() // the writer's edit is relayed once applied, before its record is durable
      const agents = (await hub.peer.history('shared')).map((record) => record.agent)
      assert.ok(!agents.includes('reader') && agents.includes('writer'), `never persisted: ${agents}`)
      assert.deepEqual(await names(), before, 'no client created a name')
    },
  ))

test('y-websocket clients of a peer without credentials: each has its own agent id in the log, never the peer’s', () =>
  withHub({}, async (hub, cleanup) => {
    const one = client(hub, 'doc', {}, cleanup)
    const two = client(hub, 'doc', {}, cleanup)
    const named = client(hub, 'doc', { params: { peer: 'carol' } }, cleanup)
    await until(() => one.provider.synced && two.provider.synced && named.provider.synced, 'synced')
    one.doc.getText('t').insert(0, '1')
    await until(() => text(two.doc) === '1', 'one -> two')
    two.doc.getText('t').insert(1, '2')
    await until(() => text(named.doc) === '12', 'two -> carol')
    named.doc.getText('t').insert(2, '3')
    await until(() => text(one.doc) === '123', 'carol -> one')
    await hub.peer.flush()
    const agents = (await hub.peer.history('doc')).map((record) => record.agent)
    assert.equal(agents.length, 3, `one record per edit: ${agents}`)
    assert.ok(!agents.includes('hub'), `no edit is logged as the serving peer's: ${agents}`)
    assert.match(agents[0], /^yws-[0-9a-f]{12}$/)
    assert.match(agents[1], /^yws-[0-9a-f]{12}$/)
    assert.notEqual(agents[0], agents[1], 'two connections, two agent ids')
    assert.equal(agents[2], 'carol')
    assert.equal(hub.peer.stats().yWebsocket!.rooms, 1)
    for (const c of [one, two, named]) c.provider.destroy()
    await until(() => hub.peer.stats().yWebsocket!.rooms === 0, 'the room is released with its last client')
  }))

test("y-websocket clients are sent the hub's own changes only once durable: a change waiting for its write reaches them once logged", async () => {
  const dir = await tempDir('concord-yws-durable-')
  const storage = new GatedStorage(await openLevelStorage({ dir: dir.path }))
  const hub = await createPeer({ agentId: 'hub', storage })
  const doc = new Y.Doc()
  let provider: ReturnType<typeof yClient>['provider'] | undefined
  try {
    const { port } = await hub.listen()
    const notes = await hub.yjs('notes')
    const connected = yClient(`ws://127.0.0.1:${port}/yjs`, 'notes', doc)
    provider = connected.provider
    await until(() => provider!.synced, 'synced')

    storage.hold()
    notes.doc.getText('t').insert(0, 'not yet logged')
    await until(() => storage.held > 0, 'the write is held')
    // Ask the hub something: its answer comes after anything it sent before (one ordered socket).
    const seen = connected.log.received.length
    provider.ws!.send(new Encoder().writeVarUint(3).finish()) // y-websocket "query awareness"
    await until(() => connected.log.received.length > seen, 'the answer to the query')
    assert.equal(text(doc), '', 'a change not yet durable was not sent')

    storage.release()
    await until(() => text(doc) === 'not yet logged', 'sent once logged')
  } finally {
    provider?.destroy()
    doc.destroy()
    storage.release()
    await hub.close()
    await storage.close()
    await dir.remove()
  }
})

/** An awareness message: `count (clientID clock state:JSON)*`, framed as y-websocket's message 1. */
function awarenessMessage(entries: Array<[number, number, unknown]>): Uint8Array {
  const update = new Encoder().writeVarUint(entries.length)
  for (const [id, clock, state] of entries) update.writeVarUint(id).writeVarUint(clock).writeString(JSON.stringify(state))
  return new Encoder().writeVarUint(1).writeBytes(update.finish()).finish()
}

test('y-websocket awareness is bounded (per client, per room, bytes, rate; no one overwrites another presence) and never persisted', () =>
  withHub(
    {},
    async (hub, cleanup) => {
      ;(await hub.peer.yjs('room')).doc.getText('t').insert(0, 'x')
      await hub.peer.flush()
      const records = (await hub.peer.history('room')).length
      const alice = client(hub, 'room', {}, cleanup)
      const bob = client(hub, 'room', {}, cleanup)
      await until(() => alice.provider.synced && bob.provider.synced, 'synced')
      alice.provider.awareness.setLocalStateField('user', 'alice')
      const aliceId = alice.doc.clientID
      const userOf = (id: number) => (bob.provider.awareness.getStates().get(id) as { user?: string } | undefined)?.user
      await until(() => userOf(aliceId) === 'alice', "bob sees alice's presence")

      const mallory = new WebSocket(`ws://127.0.0.1:${hub.port}/yjs/room`)
      cleanup(() => mallory.terminate())
      const answers: Uint8Array[] = []
      mallory.on('message', (data: Buffer) => answers.push(new Uint8Array(data)))
      await new Promise((resolve) => mallory.once('open', resolve))
      const dropped = () => hub.peer.stats().yWebsocket!.awarenessDropped
      // someone else's presence: overwritten (higher clock), then removed
      mallory.send(awarenessMessage([[aliceId, 1000, { user: 'mallory' }]]))
      mallory.send(awarenessMessage([[aliceId, 1001, null]]))
      // ten ids at once (4 per client), and one state of 20 KB
      mallory.send(awarenessMessage(Array.from({ length: 10 }, (_, i) => [900_000 + i, 1, { user: `m${i}` }] as [number, number, unknown])))
      mallory.send(awarenessMessage([[800_000, 1, { user: 'big', blob: 'x'.repeat(20_000) }]]))
      const mallorys = () => [...bob.provider.awareness.getStates().keys()].filter((id) => id >= 900_000 && id < 900_010).length
      await until(() => mallorys() === 4, 'four of the ids relayed').catch((error) => {
        throw new Error(`${error.message}: ${mallorys()} relayed`)
      })
      assert.equal(userOf(aliceId), 'alice', "alice's presence untouched")
      // exactly these (stock clients echo every change they receive back: those are not counted)
      await until(() => dropped() === 2 + 6 + 1, 'two entries on alice, six ids over the four, one oversized state: dropped')
      assert.equal(bob.provider.awareness.getStates().has(800_000), false, 'the oversized state was dropped')

      // a flood: beyond the rate (5/s here, bursts of 10) messages are dropped whole
      for (let i = 0; i < 200; i++) mallory.send(awarenessMessage([[900_000, 2 + i, { user: `flood ${i}` }]]))
      await until(() => dropped() - 9 >= 150, 'most of the flood dropped')

      // a flood of sync requests (each costs an encoding and a flush): beyond 4 per second (bursts of 8) dropped
      const isStep2 = (message: Uint8Array) => message[0] === 0 && message[1] === 1
      const step1 = new Encoder()
        .writeVarUint(0)
        .writeVarUint(0)
        .writeBytes(new Uint8Array([0]))
        .finish()
      for (let i = 0; i < 100; i++) mallory.send(step1)
      const answered = () => answers.filter(isStep2).length
      await until(() => answered() + hub.peer.stats().yWebsocket!.requestsDropped === 100, 'every request answered or dropped')
      assert.ok(answered() < 50, `answered ${answered()} of 100`)

      assert.equal((await hub.peer.history('room')).length, records, 'awareness is never persisted')
      assert.deepEqual(
        (await hub.peer.names()).map((n) => n.name),
        ['room'],
      )
    },
    { yWebsocket: { awareness: { messagesPerSecond: 5 } } },
  ))
