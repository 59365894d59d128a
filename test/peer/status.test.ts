/**
 * peer.status(): the durability mode and the last fsync (real LevelDB
 * folders), and each session's sync state over real sockets on 127.0.0.1:
 * who, open and synced, lag and last acknowledgement, refused writes both
 * ways, malformed input.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { handshake, rawClient } from '../helpers/raw-client.ts'
import { createPeer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

test('status: the durability mode and when the last fsync happened (sync and async folders)', async () => {
  const dir = await tempDir()
  const sync = await createPeer({ agentId: 's', dir: join(dir.path, 's') })
  const lazy = await createPeer({ agentId: 'a', dir: join(dir.path, 'a'), durability: { mode: 'async', rpoMs: 60_000 } })
  try {
    const before = Date.now()
    ;(await sync.counter('c')).increment()
    await until(() => sync.store.committedSeq('c') > 0 && sync.status().durability.lastFsyncAt !== null, 'the sync write')
    const status = sync.status()
    assert.equal(status.agentId, 's')
    assert.equal(status.durability.mode, 'sync')
    assert.ok(status.durability.lastFsyncAt! >= before)
    assert.ok(status.durability.fsyncs >= 1)

    const counter = await lazy.counter('c')
    counter.increment()
    await lazy.store.flush()
    const opened = lazy.status().durability
    assert.deepEqual({ mode: opened.mode, rpoMs: opened.rpoMs }, { mode: 'async', rpoMs: 60_000 })
    counter.increment()
    await until(() => lazy.status().durability.batches > opened.batches, 'the async write')
    assert.equal(lazy.status().durability.fsyncs, opened.fsyncs, 'written, not fsynced within the 60 s window')
    const beforeFlush = Date.now()
    await lazy.store.flush()
    const flushed = lazy.status().durability
    assert.equal(flushed.fsyncs, opened.fsyncs + 1)
    assert.ok(flushed.lastFsyncAt! >= beforeFlush)
  } finally {
    await sync.close()
    await lazy.close()
    await dir.remove()
  }
})

test('status: each session with its remote, synced state, lag, last ack, refused writes and malformed input', async () => {
  const dir = await tempDir()
  const hub = await createPeer({
    agentId: 'hub',
    dir: join(dir.path, 'hub'),
    auth: { accept: { ana: 'ana-secret', bob: 'bob-secret', raw: 'raw-secret' } },
    access: (peer, name) => (peer === 'bob' && name.startsWith('ro/') ? 'read' : 'write'),
  })
  const ana = await createPeer({ agentId: 'ana', dir: join(dir.path, 'ana'), auth: { token: 'ana-secret' } })
  const bob = await createPeer({ agentId: 'bob', dir: join(dir.path, 'bob'), auth: { token: 'bob-secret' } })
  try {
    const { url } = await hub.listen()
    ;(await hub.counter('ro/budget')).increment(5)
    await ana.connect(url)
    await bob.connect(url)
    await until(() => hub.status().sessions.filter((s) => s.synced).length === 2, 'both sessions synced')
    ;(await ana.counter('shared')).increment(3)
    await until(async () => (await hub.counter('shared')).value() === 3, 'ana -> hub')
    await until(() => ana.status().sessions[0].lag.commits === 0 && ana.status().sessions[0].lastAckAt !== null, "the hub's ack")
    const fromAna = ana.status().sessions[0]
    assert.equal(fromAna.agentId, 'hub')
    assert.equal(fromAna.state, 'open')
    assert.equal(fromAna.synced, true)
    assert.ok(fromAna.openedAt! >= fromAna.startedAt)
    assert.equal(fromAna.ackedSeq, fromAna.sentSeq)
    assert.deepEqual(fromAna.lag, { commits: 0, bytes: 0 })
    assert.ok(fromAna.bytesOut > 0 && fromAna.commitsOut > 0)

    // bob may only read ro/: his write is refused by the hub, and each side counts it.
    await until(async () => (await bob.counter('ro/budget')).value() === 5, 'ro/budget reaches bob')
    ;(await bob.counter('ro/budget')).increment()
    await until(() => hub.status().sessions.find((s) => s.agentId === 'bob')?.refusedWrites === 1, 'the hub refuses bob')
    await until(() => bob.status().sessions[0].rejectedByRemote === 1, 'bob learns it was refused')
    assert.equal((await hub.counter('ro/budget')).value(), 5)

    // Garbage on an open session: counted as malformed on the hub's side of it.
    const raw = await rawClient(url)
    await handshake(raw, 'raw', 'raw-secret')
    await until(() => hub.status().sessions.some((s) => s.agentId === 'raw' && s.state === 'open'), 'the raw session opens')
    raw.send(new Uint8Array([1, 5, 0xff])) // a truncated delta
    await until(() => (hub.status().sessions.find((s) => s.agentId === 'raw')?.malformed ?? 0) >= 1, 'the garbage is counted')
    raw.ws.close()
    await until(() => !hub.status().sessions.some((s) => s.agentId === 'raw'), 'the raw session ends')
    const peers = hub
      .status()
      .sessions.map((s) => s.agentId)
      .filter((id) => id !== null)
      .sort()
    assert.deepEqual(peers, ['ana', 'bob'])
  } finally {
    await ana.close()
    await bob.close()
    await hub.close()
    await dir.remove()
  }
})
