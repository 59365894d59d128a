/**
 * The resync timeout measures silence, not total time: an answer that takes
 * longer than `resyncTimeoutMs` to arrive (a slow link: the receiver's
 * inbound rate limit lets it in a little at a time) is not asked for again
 * while it is still arriving, and a remote that stays silent is asked a
 * bounded number of times, then the session closes. Virtual time only (the
 * simulated network's clock drives `now` and the ticks).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ORSetReplica } from '../../crdt/types/index.ts'
import { MAX_RESYNC_RETRIES } from '../../sync/anti-entropy.ts'
import type { SyncSession } from '../../sync/session.ts'
import { Network } from '../../transports/memory/index.ts'
import { SimPeer } from './helpers/sim.ts'

const NAMES = 40

/** Ticks both peers every 250 virtual ms until `until` holds or `maxMs` pass. */
async function runTicking(network: Network, peers: SimPeer[], until: () => boolean, maxMs: number): Promise<void> {
  let stop = false
  const tick = (): void => {
    if (stop) return
    for (const peer of peers) peer.tick()
    network.schedule(250, tick)
  }
  network.schedule(250, tick)
  await network.run({ until, maxTime: network.now + maxMs })
  stop = true
}

/** Dials a -> b and returns a's session once attached (before anything of the sync can have been handled). */
async function dial(network: Network, a: SimPeer, b: SimPeer): Promise<SyncSession> {
  const dialing = a.dial(b)
  await network.run({ until: () => a.history.length > 0, maxTime: network.now + 1000 })
  return dialing
}

/** `b` holds NAMES sets of about 600 bytes each (about 24 KB to send). */
function fill(b: SimPeer): void {
  for (let i = 0; i < NAMES; i++) {
    const set = b.host.open(`set-${String(i).padStart(3, '0')}`, 'orset') as ORSetReplica<string>
    set.add(`item-${i}-${'x'.repeat(600)}`)
  }
}

for (const reconcile of [false, true]) {
  const mode = reconcile ? 'reconciliation' : 'VERSIONS'
  test(`resync timeout (${mode}): an answer that takes 12 s to arrive over a slow link is asked for once`, async () => {
    const network = new Network({ seed: 31 })
    // a's link lets in 2 KB/s in frames of at most 1 KiB: b's answer takes about 12 s, the resync timeout is 5 s.
    const a = new SimPeer(
      network,
      'a',
      {},
      { reconcile, maxFrameBytes: 1024, rateLimit: { bytesPerSecond: 2000, burstBytes: 2000, maxDeferredBytes: 1 << 20 } },
    )
    const b = new SimPeer(network, 'b', {}, { reconcile })
    await b.listen()
    fill(b)
    let synced = false
    const ab = await dial(network, a, b)
    ab.events.on('synced', () => {
      synced = true
    })
    await runTicking(network, [a, b], () => synced, 120_000)
    assert.ok(synced, 'a synced')
    assert.ok(network.now > 10_000, `the answer took longer than the resync timeout (${network.now} ms)`)
    assert.deepEqual(a.host.values(), b.host.values())
    assert.equal(ab.stats.resyncRetries, 0, 'never repeated while the answer was arriving')
    assert.equal(ab.stats.versionsSent + ab.stats.reconciliations, 1, 'one resync')
    const [ba] = b.history
    assert.equal(ba.stats.commitsOut, 1, 'b sent its answer once (one bundle)')
    assert.equal(ba.stats.resyncRetries, 0)
    assert.ok(ab.stats.keepalivesOut > 0, 'a told b it was still taking the answer')
    assert.equal(ab.stats.malformed + ba.stats.malformed, 0)
    assert.equal(ab.state, 'open')
  })

  test(`resync timeout (${mode}): a remote that never answers is asked ${MAX_RESYNC_RETRIES} more times, each after twice the wait, then the session closes`, async () => {
    const network = new Network({ seed: 32 })
    const a = new SimPeer(network, 'a', {}, { reconcile })
    // b serves one expensive request (the one on open), then none for a very long time.
    const b = new SimPeer(network, 'b', {}, { reconcile, requestRate: { perSecond: 0.000_001, burst: 1 } })
    await b.listen()
    fill(b)
    const ab = await dial(network, a, b)
    await runTicking(network, [a, b], () => JSON.stringify(a.host.values()) === JSON.stringify(b.host.values()), 30_000)
    await runTicking(network, [a, b], () => false, 1000) // the DONE lands
    assert.deepEqual(a.host.values(), b.host.values())
    const sentBefore = ab.stats.versionsSent + ab.stats.reconciliations
    let closedAt: number | undefined
    let reason: string | undefined
    ab.events.on('close', (event) => {
      closedAt = network.now
      reason = event.reason
    })
    const pulledAt = network.now
    ab.pull()
    await runTicking(network, [a, b], () => closedAt !== undefined, 600_000)
    assert.equal(ab.stats.resyncRetries, MAX_RESYNC_RETRIES)
    assert.equal(ab.stats.versionsSent + ab.stats.reconciliations - sentBefore, 1 + MAX_RESYNC_RETRIES)
    assert.match(reason ?? '', /resync timeout/)
    // 5 + 10 + 20 + 40 s of silence (ticks every 250 ms)
    assert.ok(closedAt! - pulledAt >= 75_000 && closedAt! - pulledAt < 77_000, `closed ${closedAt! - pulledAt} ms after the pull`)
  })
}

test('a VERSIONS larger than the remote frame limit travels in chunks', async () => {
  const network = new Network({ seed: 33 })
  const a = new SimPeer(network, 'a', {}, { reconcile: false, maxFrameBytes: 256 })
  const b = new SimPeer(network, 'b', {}, { reconcile: false, maxFrameBytes: 256 })
  await b.listen()
  for (let i = 0; i < 60; i++) (a.host.open(`left-${i}`, 'orset') as ORSetReplica<string>).add(`a${i}`)
  for (let i = 0; i < 60; i++) (b.host.open(`right-${i}`, 'orset') as ORSetReplica<string>).add(`b${i}`)
  const ab = await dial(network, a, b)
  await runTicking(network, [a, b], () => a.host.replicas.size === 120 && b.host.replicas.size === 120, 10_000)
  const [ba] = b.history
  assert.deepEqual(a.host.values(), b.host.values())
  assert.equal(ab.stats.malformed + ba.stats.malformed, 0, 'no frame over the limit')
  assert.ok(ab.stats.versionsSent >= 1 && ba.stats.versionsSent >= 1)
  assert.ok(ab.stats.chunksIn > 0 && ba.stats.chunksIn > 0)
})
