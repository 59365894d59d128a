/**
 * Remote commits that queue up while a peer handles one (a busy receiver)
 * are handled together: one store unit for them, each record still under
 * its own author, and a refused one refused alone, as if each had come by
 * itself (sync/intake.ts groups, sync/inbound-commits.ts `onCommits`,
 * `SyncHost.applyRemoteGroup`). The receiver's loop is held while the
 * frames arrive, so that they are all waiting when it reads them.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import { encodeMessage, type Message } from '../../sync/messages.ts'
import { openStore } from '../../persistence/index.ts'
import { provenanceExtension } from '../../sync/provenance.ts'
import { until } from '../helpers/wait.ts'
import type { Peer } from '../../peer/index.ts'
import { withPeers } from '../history/helpers.ts'
import { rawClient, type RawClient } from './helpers/raw-concord-client.ts'

/** `count` increments of a counter, as the deltas a remote would send. */
async function increments(count: number): Promise<Uint8Array[]> {
  const source = await openStore({ agentId: 'source', sweepMs: 0 })
  const deltas: Uint8Array[] = []
  const counter = (await source.open('c', 'gcounter')) as GCounterReplica
  counter.on('change', (event) => deltas.push(event.delta))
  for (let i = 0; i < count; i++) counter.increment(1)
  await source.close()
  return deltas
}

/** Sends every message at once while this process's loop is held, so that the receiver (in this process) finds them all waiting. */
function sendWhileBusy(ws: { send(data: Uint8Array): void }, messages: readonly Message[]): void {
  for (const message of messages) ws.send(encodeMessage(message))
  const until = Date.now() + 60
  while (Date.now() < until) {
    // the loop is held: the frames wait in the socket
  }
}

const entry = (delta: Uint8Array) => ({ name: 'c', replicaType: 'gcounter' as const, delta })

/** A hub, a raw client that takes provenance, `count` counter deltas to send, and the hub's `applied` events so far. */
function withRelay(count: number, fn: (hub: Peer, raw: RawClient, deltas: Uint8Array[], applied: () => number) => Promise<void>): Promise<void> {
  return withPeers([{ agentId: 'hub' }], async ([hub]) => {
    const { url } = await hub.listen()
    const deltas = await increments(count)
    let applied = 0
    hub.store.events.on('applied', () => applied++)
    const raw = await rawClient(url, true, { peer: 'relay', extensions: [provenanceExtension()] })
    try {
      await fn(hub, raw, deltas, () => applied)
    } finally {
      raw.ws.close()
    }
  })
}

test('commits that queued up are applied as one unit, each logged under its author, acknowledged in full', () =>
  withRelay(20, async (hub, raw, deltas, applied) => {
    const messages: Message[] = deltas.flatMap((delta, i) => [
      { type: 'provenance' as const, seq: i + 1, agent: `author-${i + 1}`, message: `change ${i + 1}` },
      { type: 'delta' as const, seq: i + 1, entry: entry(delta) },
    ])
    sendWhileBusy(raw.ws, messages)
    await until(async () => (await hub.names()).length === 1 && (await hub.history('c')).length === 20, 'all 20 commits logged')
    const history = await hub.history('c')
    assert.deepEqual(
      history.map((h) => [h.agent, h.message]),
      deltas.map((_, i) => [`author-${i + 1}`, `change ${i + 1}`]),
      'each record under its own author, in order',
    )
    assert.equal(((await hub.open('c', 'gcounter')) as GCounterReplica).value(), 20)
    assert.ok(applied() < 20, `fewer units than commits (${applied()} for 20): the queued ones went together`)
    await until(() => raw.received.some((m) => m.type === 'ack' && m.seq === 20), 'every commit acknowledged')
    assert.equal(raw.received.filter((m) => m.type === 'reject').length, 0)
  }))

test('a refused commit among queued ones is refused alone: the others apply, each once, in order', () =>
  withRelay(6, async (hub, raw, deltas) => {
    const messages: Message[] = []
    for (const [i, delta] of deltas.entries()) {
      messages.push({ type: 'provenance', seq: i + 1, agent: `author-${i + 1}` })
      // Commit 4 names the counter as another type: refused (type mismatch), nothing of it applied.
      messages.push({ type: 'delta', seq: i + 1, entry: i === 3 ? { name: 'c', replicaType: 'orset', delta } : entry(delta) })
    }
    sendWhileBusy(raw.ws, messages)
    await until(() => raw.received.some((m) => m.type === 'reject'), 'commit 4 refused')
    await until(async () => (await hub.names()).length === 1 && (await hub.history('c')).length === 5, 'the five others logged')
    const rejects = raw.received.filter((m) => m.type === 'reject') as Array<{ seq: number }>
    assert.deepEqual(
      rejects.map((r) => r.seq),
      [4],
    )
    assert.deepEqual(
      (await hub.history('c')).map((h) => h.agent),
      ['author-1', 'author-2', 'author-3', 'author-5', 'author-6'],
    )
    // A G-counter delta carries its actor's total: the sixth holds what the fourth would have added.
    assert.equal(((await hub.open('c', 'gcounter')) as GCounterReplica).value(), 6)
    await until(() => raw.received.some((m) => m.type === 'ack' && m.seq === 6), 'acknowledged up to the last')
  }))

test('commits of different names taken together are not made joint: each was a unit of its own', () =>
  withRelay(8, async (hub, raw, deltas, applied) => {
    // The increments, alternately to "a" and "b": eight commits of one name each.
    const messages: Message[] = deltas.map((delta, i) => ({
      type: 'delta' as const,
      seq: i + 1,
      entry: { name: i % 2 === 0 ? 'a' : 'b', replicaType: 'gcounter' as const, delta },
    }))
    sendWhileBusy(raw.ws, messages)
    await until(() => raw.received.some((m) => m.type === 'ack' && m.seq === 8), 'all eight acknowledged')
    assert.ok(applied() < 8, `taken together (${applied()} units for 8 commits)`)
    const joint = await hub.store.jointNames()
    assert.equal(joint('a'), false, 'a is not joint')
    assert.equal(joint('b'), false, 'b is not joint')
  }))
