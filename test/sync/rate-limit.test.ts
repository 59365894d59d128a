import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TokenBucket } from '../../sync/token-bucket.ts'
import { Network } from '../../transports/memory/index.ts'
import type { ORSetReplica } from '../../crdt/types/index.ts'
import { SimPeer, connectPair } from './helpers/sim.ts'

test('token bucket: a burst, then the rate; an item over the burst passes only from a full bucket', () => {
  const bucket = new TokenBucket(1000, 500, 0)
  assert.ok(bucket.tryTake(500, 0))
  assert.ok(!bucket.tryTake(1, 0))
  assert.ok(bucket.tryTake(100, 100)) // 100 ms -> 100 tokens
  assert.ok(!bucket.tryTake(100, 150))
  assert.ok(bucket.tryTake(2000, 10_000)) // full bucket: a big item passes, leaving a debt
  assert.ok(!bucket.tryTake(1, 10_000))
  assert.ok(bucket.tryTake(1, 11_600))
})

test('inbound rate limit: frames beyond the rate wait and are applied in order as time passes', async () => {
  const network = new Network({ seed: 7 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b', {}, { rateLimit: { bytesPerSecond: 4000, burstBytes: 4000, maxDeferredBytes: 1 << 20 } })
  await b.listen()
  const { ba } = await connectPair(network, a, b)
  const set = a.host.open('s', 'orset') as ORSetReplica<string>
  for (let i = 0; i < 60; i++) set.add(`item-${i}-${'x'.repeat(100)}`)
  await network.run({ maxTime: network.now + 50 })
  await network.run()
  const early = (b.host.replicas.get('s') as ORSetReplica<string> | undefined)?.size ?? 0
  assert.ok(early < 60, `only part arrives within the first 50 ms (${early})`)
  assert.ok(ba.stats.deferred > 0)
  for (let t = 0; t < 40 && ((b.host.replicas.get('s') as ORSetReplica<string> | undefined)?.size ?? 0) < 60; t++) {
    // let 250 ms of virtual time pass, then tick (as the peer's timer does)
    network.timers.setTimeout(() => {}, 250)
    await network.run()
    b.tick()
    await network.run()
  }
  assert.deepEqual(b.host.values(), a.host.values())
  assert.equal(ba.state, 'open')
})

test('inbound rate limit: a peer that floods past the waiting bound is refused with limit', async () => {
  const network = new Network({ seed: 8 })
  const a = new SimPeer(network, 'a')
  const b = new SimPeer(network, 'b', {}, { rateLimit: { bytesPerSecond: 1000, burstBytes: 1000, maxDeferredBytes: 4000 } })
  await b.listen()
  const { ab, ba } = await connectPair(network, a, b)
  const refused: string[] = []
  ab.events.on('refused', ({ reason }) => refused.push(reason))
  const set = a.host.open('flood', 'orset') as ORSetReplica<string>
  for (let i = 0; i < 200; i++) set.add(`flood-${i}-${'y'.repeat(200)}`)
  await network.run()
  assert.equal(ba.state, 'closed')
  assert.deepEqual(refused, ['limit'])
})
