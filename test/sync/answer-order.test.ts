import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Network } from '../../transports/memory/index.ts'
import type { ORSetReplica, PNCounterReplica } from '../../crdt/types/index.ts'
import type { HostedName } from '../../sync/host.ts'
import { SimPeer, connectPair } from './helpers/sim.ts'

test('live commits made while an answer is computed never overtake it (no later counter total without the earlier set adds)', async () => {
  const network = new Network({ seed: 11 })
  const source = new SimPeer(network, 'source')
  const receiver = new SimPeer(network, 'receiver')
  await source.listen()
  const counter = source.host.open('tx/a', 'pncounter') as PNCounterReplica
  const set = source.host.open('tx/b', 'orset') as ORSetReplica<number>
  let n = 0
  const transaction = () =>
    source.host.transact(() => {
      n++
      counter.increment()
      set.add(n)
    })
  for (let i = 0; i < 50; i++) transaction()
  // The source lists its names asynchronously, and commits twice while it does.
  const list = source.host.list.bind(source.host)
  source.host.list = (async () => {
    await Promise.resolve()
    transaction()
    await new Promise((resolve) => setImmediate(resolve))
    transaction()
    return list()
  }) as unknown as () => HostedName[]
  // Every commit the receiver applies must keep counter == |set|.
  const seen: Array<[number, number]> = []
  const apply = receiver.host.applyRemote.bind(receiver.host)
  receiver.host.applyRemote = async (entries, origin) => {
    const result = await apply(entries, origin)
    const a = (receiver.host.replicas.get('tx/a') as PNCounterReplica | undefined)?.value() ?? 0
    const b = (receiver.host.replicas.get('tx/b') as ORSetReplica<number> | undefined)?.size ?? 0
    seen.push([a as number, b])
    return result
  }
  await connectPair(network, receiver, source)
  await network.run()
  assert.ok(seen.length > 0)
  for (const [a, b] of seen) assert.equal(a, b, `receiver held counter ${a} with a set of ${b}: a live commit overtook the answer`)
  assert.deepEqual(receiver.host.values(), source.host.values())
})
