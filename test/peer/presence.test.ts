/**
 * Presence over real WebSocket sessions: who works on what crosses a hub,
 * reaches a peer that connects later, expires with its TTL and is cleared
 * everywhere; an entry about a name goes only to peers that may read it; a
 * peer that does not take presence is sent none and still syncs; a session
 * that floods presence or forges this peer's own agents is dropped and
 * counted, and nothing of it is ever persisted.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createPeer, type Peer } from '../../peer/index.ts'
import { createTestPeer } from '../../testing/index.ts'
import { presenceExtension, type PresenceEntry } from '../../sync/presence.ts'
import type { DecodedMessage } from '../../sync/messages.ts'
import { until } from '../helpers/wait.ts'
import { rawClient } from './helpers/raw-concord-client.ts'

const state = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
const agents = (peer: Peer) => peer.presence.list().map((info) => info.agent)

async function closeAll(peers: Peer[]): Promise<void> {
  await Promise.all(peers.map((peer) => peer.close()))
}

test('presence crosses a hub, reaches a late peer, expires with its TTL and is cleared everywhere', async () => {
  const peers: Peer[] = []
  try {
    const hub = await createTestPeer({ agentId: 'hub', tickMs: 50 })
    const a = await createTestPeer({ agentId: 'a', tickMs: 50 })
    const b = await createTestPeer({ agentId: 'b', tickMs: 50 })
    peers.push(hub, a, b)
    const { url } = await hub.listen()
    await a.connect(url)
    await b.connect(url)

    const set = a.presence.set('ana', { status: { doing: 'drafting the summary' }, name: 'notes', ttlMs: 60_000 })
    assert.equal(set.local, true)
    await until(() => agents(b).includes('ana'), 'b sees ana through the hub')
    const seen = b.presence.list().find((info) => info.agent === 'ana')!
    assert.deepEqual(
      { peer: seen.peer, name: seen.name, status: seen.status, local: seen.local },
      { peer: 'a', name: 'notes', status: { doing: 'drafting the summary' }, local: false },
    )
    assert.ok(seen.expiresAt > Date.now() + 50_000, 'the remaining TTL travels')

    b.presence.set('bo', { status: 'reviewing', ttlMs: 60_000 })
    await until(() => agents(a).includes('bo') && agents(hub).includes('bo'), 'a and the hub see bo')

    // A newer state replaces the old one everywhere.
    a.presence.set('ana', { status: { doing: 'checking sources' }, name: 'notes', ttlMs: 60_000 })
    await until(() => JSON.stringify(b.presence.list().find((info) => info.agent === 'ana')?.status) === '{"doing":"checking sources"}', 'the newer state')

    // A peer that connects later gets the whole table when its session opens.
    const late = await createTestPeer({ agentId: 'late', tickMs: 50 })
    peers.push(late)
    await late.connect(url)
    await until(() => agents(late).join() === 'ana,bo', 'the late peer gets the table')

    // A short TTL: seen, then gone on every peer without anyone clearing it.
    a.presence.set('flash', { status: 'here briefly', ttlMs: 400 })
    await until(() => agents(b).includes('flash'), 'b sees the short-lived entry')
    await until(() => !agents(b).includes('flash') && !agents(hub).includes('flash') && !agents(a).includes('flash'), 'expired everywhere', 5_000)
    await until(() => b.stats().presence.expired >= 1 && a.stats().presence.expired >= 1, 'swept from the tables as expired', 5_000)

    // Clearing removes it everywhere, before its TTL.
    assert.equal(a.presence.clear('ana'), true)
    await until(() => !agents(b).includes('ana') && !agents(late).includes('ana') && !agents(hub).includes('ana'), 'ana cleared everywhere')
    assert.equal(b.presence.clear('ana'), false, 'b cannot clear an agent it does not serve')
    // Nothing of it was persisted.
    assert.deepEqual(await hub.names(), [])
  } finally {
    await closeAll(peers)
  }
})

test('presence about a name goes only to peers that may read it; unnamed presence goes to every peer', async () => {
  const peers: Peer[] = []
  try {
    const hub = await createPeer({
      agentId: 'hub',
      auth: { accept: { writer: 'w', viewer: 'v' } },
      access: (peer, name) => (name.startsWith('private/') && peer !== 'writer' ? 'none' : 'write'),
    })
    const writer = await createPeer({ agentId: 'writer', auth: { token: 'w' } })
    peers.push(hub, writer)
    const { url } = await hub.listen()
    await writer.connect(url)
    const viewer = await rawClient(url, true, { peer: 'viewer', token: 'v', extensions: [presenceExtension()] })
    try {
      writer.presence.set('secret-agent', { status: 'on the plan', name: 'private/plan', ttlMs: 60_000 })
      writer.presence.set('open-agent', { status: 'idle', ttlMs: 60_000 })
      writer.presence.set('notes-agent', { status: 'writing', name: 'public/notes', ttlMs: 60_000 })
      await until(() => agents(hub).length === 3, 'the hub holds all three')
      const presenceOf = (messages: DecodedMessage[]) => messages.flatMap((m) => (m.type === 'presence' ? m.entries : []))
      await until(
        () => presenceOf(viewer.received).some((e) => e.agent === 'notes-agent') && presenceOf(viewer.received).some((e) => e.agent === 'open-agent'),
        'the viewer gets the readable ones',
      )
      const told = presenceOf(viewer.received)
      assert.ok(!told.some((e) => e.agent === 'secret-agent' || e.name === 'private/plan'), 'never an entry about a name the viewer may not read')
      // The hub's MCP-style listing for the viewer hides it the same way.
      const forViewer = hub.presence.list((name) => name === undefined || hub.admission.mayRead('viewer' as never, name)).map((info) => info.agent)
      assert.deepEqual(forViewer, ['notes-agent', 'open-agent'])
    } finally {
      viewer.ws.close()
    }
  } finally {
    await closeAll(peers)
  }
})

test('a peer that does not take presence is sent none and still syncs', async () => {
  const peers: Peer[] = []
  try {
    const hub = await createPeer({ agentId: 'hub' })
    const old = await createPeer({ agentId: 'old', sync: { presence: false } })
    const a = await createPeer({ agentId: 'a' })
    peers.push(hub, old, a)
    const { url } = await hub.listen()
    await old.connect(url)
    await a.connect(url)
    a.presence.set('ana', { status: 'busy', ttlMs: 60_000 })
    ;(await a.counter('hits')).increment(3)
    await until(async () => (await old.counter('hits')).value() === 3, 'data still syncs to the old peer')
    await until(() => agents(hub).includes('ana'), 'the hub holds ana')
    assert.equal(old.stats().totals.presenceIn + old.stats().totals.unexpected + old.stats().totals.unknown, 0, 'no PRESENCE was sent to it')
    assert.deepEqual(agents(old), [])
  } finally {
    await closeAll(peers)
  }
})

test('a session that floods presence is dropped past the rate; entries forging this peer or its own agents are ignored; malformed ones counted', async () => {
  const peers: Peer[] = []
  try {
    const hub = await createPeer({ agentId: 'hub' })
    peers.push(hub)
    hub.presence.set('hub-agent', { status: 'serving', ttlMs: 60_000 })
    const { url } = await hub.listen()
    const raw = await rawClient(url, true, { peer: 'raw', extensions: [presenceExtension()] })
    try {
      const entry = (agent: string, clock: number, over: Partial<PresenceEntry> = {}): PresenceEntry => ({
        agent,
        peer: 'raw',
        clock,
        ttlMs: 60_000,
        name: '',
        state: state({ n: clock }),
        ...over,
      })
      await raw.send({ type: 'presence', entries: [entry('hub-agent', Date.now() + 1_000_000), entry('fake', 1, { peer: 'hub' }), entry('mallory', 5)] })
      await until(() => agents(hub).includes('mallory'), 'a real entry is taken')
      assert.deepEqual(hub.presence.list().find((info) => info.agent === 'hub-agent')?.status, 'serving', "this peer's own agent is not overwritten")
      assert.ok(!agents(hub).includes('fake'), 'an entry claiming to come from this peer is ignored')
      // An older clock changes nothing; a state that is not JSON is dropped.
      await raw.send({ type: 'presence', entries: [entry('mallory', 4, { state: state('older') }), entry('junk', 9, { state: new Uint8Array([0xff, 0xfe]) })] })
      // A message over a bound (a TTL above 10 minutes) does not decode: counted as malformed.
      await raw.send({ type: 'presence', entries: [entry('late', 11, { ttlMs: 700_000 })] })
      await until(() => hub.stats().totals.malformed >= 1, 'the malformed PRESENCE is counted')
      // A flood: 200 messages at once.
      for (let i = 0; i < 200; i++) await raw.send({ type: 'presence', entries: [entry(`flood-${i % 3}`, 10 + i)] })
      await until(() => hub.stats().totals.presenceDropped > 0, 'the flood is dropped past the rate')
      const stats = hub.stats()
      assert.ok(stats.totals.presenceIn <= 60, `at most about a burst taken (${stats.totals.presenceIn})`)
      assert.ok(stats.presence.dropped >= 1, 'the non-JSON state is dropped')
      assert.ok(stats.presence.entries <= 6, `the table stays small (${stats.presence.entries})`)
      assert.deepEqual(hub.presence.list().find((info) => info.agent === 'mallory')?.status, { n: 5 }, 'the older entry changed nothing')
      assert.ok(!agents(hub).includes('junk') && !agents(hub).includes('late'))
      assert.equal(raw.ws.readyState, raw.ws.OPEN, 'the session goes on')
      assert.deepEqual(await hub.names(), [], 'nothing persisted')
    } finally {
      raw.ws.close()
    }
  } finally {
    await closeAll(peers)
  }
})
