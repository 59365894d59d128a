/**
 * Coalesced ACKs (SessionOptions.ackDelayMs, issue 19): a receiver of a
 * stream of small commits acknowledges them together, within `ackDelayMs`,
 * and never before they are durable. Simulated network, virtual time (the
 * session's timer is the network's).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as Y from 'yjs'
import { agentId } from '../../crdt/agent-id.ts'
import { decodeMessage, encodeMessage, type DecodedMessage } from '../../sync/messages.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection } from '../../transports/transport.ts'
import type { PeerSessionOptions } from './helpers/sim.ts'
import { SimPeer } from './helpers/sim.ts'

/** The Yjs updates of typing `count` characters, one per update. */
function typing(count: number): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  for (let i = 0; i < count; i++) doc.getText('t').insert(i, 'x')
  return updates
}

/** A raw remote of `b` past the handshake (protocol 1), recording what b sends. */
async function rawRemote(network: Network): Promise<{ connection: Connection; received: DecodedMessage[] }> {
  const dialing = network.transport('raw').dial('memory://b')
  await network.run()
  const connection = await dialing
  const received: DecodedMessage[] = []
  connection.events.on('message', (frame) => received.push(decodeMessage(frame)))
  await connection.send(
    encodeMessage({
      type: 'hello',
      minVersion: 1,
      maxVersion: 1,
      agentId: agentId('raw'),
      token: '',
      filter: {},
      maxFrameBytes: 1 << 20,
      window: 64,
      extensions: [],
    }),
  )
  await connection.send(encodeMessage({ type: 'hello-ok', version: 1 }))
  await network.run()
  return { connection, received }
}

/** The seqs of the ACKs that acknowledge something new (a repeat is a keepalive). */
function acks(received: readonly DecodedMessage[]): number[] {
  let last = 0
  return received.flatMap((m) => (m.type === 'ack' && m.seq > last ? [(last = m.seq)] : []))
}

/** Session options that coalesce ACKs over `ms` of the network's virtual time. */
function coalescing(network: Network, ms: number): PeerSessionOptions {
  return {
    ackDelayMs: ms,
    setTimer: (fn, delay) => {
      const handle = network.timers.setTimeout(fn, delay)
      return () => network.timers.clearTimeout(handle)
    },
  }
}

async function sendCommits(connection: Connection, updates: readonly Uint8Array[], from = 1): Promise<void> {
  for (const [i, delta] of updates.entries()) {
    await connection.send(encodeMessage({ type: 'delta', seq: from + i, entry: { name: 'doc', replicaType: 'yjs', delta } }))
  }
}

test('coalesced ACKs: a burst of commits is acknowledged by one ACK within ackDelayMs; without the option, one ACK each', async () => {
  const updates = typing(10)
  for (const delay of [0, 50]) {
    const network = new Network({ seed: 5, latency: [1, 3] })
    const b = new SimPeer(network, 'b', {}, delay > 0 ? coalescing(network, delay) : {})
    await b.listen()
    const { connection, received } = await rawRemote(network)
    const start = network.now
    await sendCommits(connection, updates)
    await network.run()
    assert.equal((b.host.replicas.get('doc') as unknown as { doc: Y.Doc }).doc.getText('t').length, 10)
    const seqs = acks(received)
    assert.equal(seqs.at(-1), 10, 'everything acknowledged in the end')
    if (delay === 0) assert.equal(seqs.length, 10, `one ACK per commit: ${seqs}`)
    else {
      assert.deepEqual(seqs, [10], 'one ACK for the burst')
      assert.ok(network.now - start <= delay + 10, 'within ackDelayMs of the first commit (and the network latency)')
    }
  }
})

test('coalesced ACKs: nothing is acknowledged before it is durable; a steady stream gets an ACK per ackDelayMs; ackEvery still bounds the backlog', async () => {
  const network = new Network({ seed: 6, latency: [1, 1] })
  let hold = true
  const held: Array<() => void> = []
  const b = new SimPeer(
    network,
    'b',
    { persist: () => (hold ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve()) },
    { ...coalescing(network, 30), ackEvery: 8 },
  )
  await b.listen()
  const { connection, received } = await rawRemote(network)
  const updates = typing(40)
  await sendCommits(connection, updates.slice(0, 3))
  await network.run({ maxTime: network.now + 200 })
  assert.deepEqual(acks(received), [], 'not durable: not acknowledged, whatever the timer')
  hold = false
  for (const resolve of held.splice(0)) resolve()
  await network.run()
  assert.equal(acks(received).at(-1), 3)

  // One commit every 5 ms for 100 ms: about one ACK per 30 ms, not one per commit.
  received.length = 0
  for (let i = 3; i < 23; i++) {
    await sendCommits(connection, [updates[i]], i + 1)
    await network.run({ maxTime: network.now + 5 })
  }
  await network.run()
  const steady = acks(received)
  assert.equal(steady.at(-1), 23)
  assert.ok(steady.length >= 3 && steady.length <= 6, `ACKs over 100 ms of a commit per 5 ms: ${steady}`)

  // A burst beyond ackEvery: acknowledged every 8 commits, not held for the timer.
  received.length = 0
  await sendCommits(connection, updates.slice(23, 40), 24)
  await network.run()
  const burst = acks(received)
  assert.equal(burst.at(-1), 40)
  for (let i = 1; i < burst.length; i++) assert.ok(burst[i] - burst[i - 1] <= 8, `ACKs at most 8 commits apart: ${burst}`)
})
