/**
 * Provenance travels with a change (issue 16): real peers (LevelDB folders,
 * WebSocket on 127.0.0.1). A change made at A and relayed by hub H to B is
 * logged under its author, with its message and meta, on H and B; a peer
 * that speaks as one from before the `provenance` extension still syncs
 * both ways (its changes logged under the peer that sent them); a
 * y-websocket client's edit is logged under that client on the hub and on
 * a peer behind it; a PROVENANCE out of bounds is refused with its commit.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as Y from 'yjs'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import type { Peer } from '../../peer/index.ts'
import { openStore } from '../../persistence/index.ts'
import { provenanceExtension } from '../../sync/provenance.ts'
import { until } from '../helpers/wait.ts'
import { rawClient } from '../peer/helpers/raw-concord-client.ts'
import { yClient } from '../peer/helpers/y-websocket-clients.ts'
import { withPeers } from './helpers.ts'

const authors = async (peer: Peer, name: string) => (await peer.history(name)).map((h) => [h.agent, h.message ?? null, h.meta ?? null])

// A change made before the hub's first answer from A travels in it, as the logged record with its provenance
// (sync/PROTOCOL.md "Answers made of records"); one made after it, live. Either way it keeps its author.
for (const when of ['right after A connects', 'before A connects'] as const)
  test(`a change made at A ${when}, relayed by hub H to B, shows author A with its message and meta on H and B`, () =>
    withPeers([{ agentId: 'hub' }, { agentId: 'A' }, { agentId: 'B' }], async ([hub, a, b]) => {
      const { url } = await hub.listen()
      await b.connect(url)
      if (when === 'right after A connects') await a.connect(url)
      const counter = await a.counter('tasks')
      await a.transact(() => counter.increment(3), { message: 'three tasks found', meta: { tool: 'planner', session: 's-1' } })
      await a.transact(() => counter.increment(1), { agent: 'ana', message: 'one more, for ana' })
      counter.increment(1) // a plain change of A's own
      if (when === 'before A connects') await a.connect(url)
      const atB = await b.counter('tasks')
      await until(() => atB.value() === 5, 'B has every change')
      await until(async () => (await hub.history('tasks')).length === 3 && (await b.history('tasks')).length === 3, 'logged on H and B')
      const expected = [
        ['A', 'three tasks found', { session: 's-1', tool: 'planner' }],
        ['ana', 'one more, for ana', null],
        ['A', null, null],
      ]
      assert.deepEqual(await authors(a, 'tasks'), expected)
      assert.deepEqual(await authors(hub, 'tasks'), expected, 'on the hub: the author, not the relay')
      assert.deepEqual(await authors(b, 'tasks'), expected, 'on B, two hops away')
      // When: the author's time travels too (each log stamps its own time as hlc; authored is when A made it).
      const made = (await a.history('tasks')).map((h) => h.hlc)
      for (const peer of [hub, b]) {
        const there = await peer.history('tasks')
        assert.deepEqual(
          there.slice(0, 2).map((h) => h.authored),
          made.slice(0, 2),
          `authored times on ${peer.agentId}`,
        )
      }
    }))

test('a peer from before the provenance extension still syncs both ways; its changes are logged under it, ours reach it', () =>
  withPeers([{ agentId: 'hub' }, { agentId: 'old', sync: { provenance: false } }, { agentId: 'B' }], async ([hub, old, b]) => {
    const { url } = await hub.listen()
    await old.connect(url)
    await b.connect(url)
    const fromOld = await old.set('seen')
    await old.transact(() => fromOld.add('x'), { agent: 'olga', message: 'kept only on the old peer' })
    const atB = await b.set('seen')
    await until(() => JSON.stringify(atB.value()) === '["x"]', 'the old peer’s change reaches B')
    await b.transact(() => atB.add('y'), { message: 'from B' })
    await until(() => JSON.stringify([...(fromOld.value() as string[])].sort()) === '["x","y"]', 'B’s change reaches the old peer')
    // The old peer sends no PROVENANCE: the hub logs its change under it; the hub's relay to B names the old peer.
    assert.deepEqual((await hub.history('seen'))[0].agent, 'old')
    assert.deepEqual((await b.history('seen'))[0].agent, 'old')
    // Nothing is sent to the old peer that it would not know: it logs B's change under the hub that sent it
    // (a remote change is applied before it is written: its record is read once logged).
    await until(async () => (await old.history('seen')).length === 2, 'B’s change logged on the old peer')
    const atOld = await old.history('seen')
    assert.deepEqual(
      atOld.map((h) => [h.agent, h.message ?? null]),
      [
        ['olga', 'kept only on the old peer'],
        ['hub', null],
      ],
    )
    assert.equal(old.stats().totals.unexpected ?? 0, 0, 'no PROVENANCE reached the old peer')
  }))

test('a y-websocket client’s edit shows that client on the hub and on a peer behind it', () =>
  withPeers([{ agentId: 'hub' }, { agentId: 'B' }], async ([hub, b]) => {
    const { url, port } = (await hub.listen()) as unknown as { url: string; port: number }
    await b.connect(url)
    const doc = new Y.Doc()
    const { provider } = yClient(`ws://127.0.0.1:${port}/yjs`, 'notes', doc, { params: { peer: 'carol' } })
    try {
      await until(() => provider.synced, 'client synced')
      doc.getText('t').insert(0, 'hello from carol')
      const atB = await b.yjs('notes')
      await until(() => atB.doc.getText('t').toString() === 'hello from carol', 'B has the edit')
      await until(async () => (await b.history('notes')).length > 0, 'logged on B')
      assert.ok(
        (await hub.history('notes')).every((h) => h.agent === 'carol'),
        'on the hub: the client',
      )
      assert.ok(
        (await b.history('notes')).every((h) => h.agent === 'carol'),
        'on B: the client, not the hub',
      )
    } finally {
      provider.destroy()
      doc.destroy()
    }
  }))

test('admission checks a PROVENANCE from the wire: out of bounds, the commit is refused and nothing applies; within bounds, the claimed author is logged', () =>
  withPeers([{ agentId: 'hub' }], async ([hub]) => {
    const { url } = await hub.listen()
    const source = await openStore({ agentId: 'mallory', sweepMs: 0 })
    const deltas: Uint8Array[] = []
    const counter = (await source.open('c', 'gcounter')) as GCounterReplica
    counter.on('change', (event) => deltas.push(event.delta))
    counter.increment(1)
    counter.increment(1)
    counter.increment(1)
    await source.close()
    const raw = await rawClient(url, true, { peer: 'mallory', extensions: [provenanceExtension()] })
    try {
      const entry = (delta: Uint8Array) => ({ name: 'c', replicaType: 'gcounter' as const, delta })
      await raw.send({ type: 'provenance', seq: 1, agent: 'x'.repeat(300) })
      await raw.send({ type: 'delta', seq: 1, entry: entry(deltas[0]) })
      await raw.send({ type: 'provenance', seq: 2, agent: 'eve', metaJson: '[1]' })
      await raw.send({ type: 'delta', seq: 2, entry: entry(deltas[1]) })
      await until(() => raw.received.filter((m) => m.type === 'reject').length === 2, 'both commits refused')
      for (const reject of raw.received.filter((m) => m.type === 'reject')) {
        assert.equal((reject as { code: string }).code, 'CONCORD_INVALID_ARGUMENT')
      }
      assert.deepEqual(
        (await hub.names()).map((n) => n.name),
        [],
        'nothing applied, no name created',
      )
      await raw.send({ type: 'provenance', seq: 3, agent: 'eve', message: 'within bounds', metaJson: '{"tool":"raw"}' })
      await raw.send({ type: 'delta', seq: 3, entry: entry(deltas[2]) })
      await until(async () => (await hub.names()).length === 1, 'the third commit applies')
      assert.deepEqual(await authors(hub, 'c'), [['eve', 'within bounds', { tool: 'raw' }]])
    } finally {
      raw.ws.close()
    }
  }))
