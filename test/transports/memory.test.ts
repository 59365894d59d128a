import { describe, it, test } from 'node:test'
import assert from 'node:assert/strict'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection } from '../../transports/transport.ts'
import { runTransportTests } from '../../testing/index.ts'

runTransportTests({ describe, it }, 'memory', async () => {
  const network = new Network({ seed: 1, auto: true })
  const server = network.transport('server')
  const address = await server.listen()
  const client = network.transport('client')
  return {
    server,
    client,
    address,
    teardown: async () => {
      await client.stop()
      await server.stop()
    },
  }
})

/** Runs a small exchange under faults and returns what arrived, in order, with virtual times. */
async function trace(seed: number): Promise<string[]> {
  const network = new Network({ seed, latency: [1, 20], drop: 0.1, duplicate: 0.1, reorder: 0.2 })
  const a = network.transport('a')
  const b = network.transport('b')
  await b.listen()
  const log: string[] = []
  b.events.on('connection', (c) => c.events.on('message', (f) => log.push(`${network.now}:${f[0]}`)))
  let outbound: Connection | undefined
  void a.dial('memory://b').then((c) => {
    outbound = c
  })
  await network.run()
  for (let i = 0; i < 100; i++) await outbound!.send(new Uint8Array([i]))
  await network.run()
  return log
}

test('memory network: a seed replays exactly; faults happen', async () => {
  const first = await trace(42)
  const again = await trace(42)
  const other = await trace(43)
  assert.deepEqual(again, first)
  assert.notDeepEqual(other, first)
  const values = first.map((entry) => Number(entry.split(':')[1]))
  assert.ok(values.length !== 100 || new Set(values).size !== 100, 'some frame was dropped or duplicated')
  const inOrder = values.every((v, i) => i === 0 || v >= values[i - 1])
  assert.equal(inOrder, false, 'some frame was reordered')
})

test('memory network: without faults frames are in order and exactly once', async () => {
  const network = new Network({ seed: 5, latency: [1, 50] })
  const a = network.transport('a')
  await network.transport('b').listen()
  const got: number[] = []
  network.transport('b').events.on('connection', (c) => c.events.on('message', (f) => got.push(f[0])))
  const dialed = a.dial('b')
  await network.run()
  const c = await dialed
  for (let i = 0; i < 200; i++) void c.send(new Uint8Array([i & 0xff]))
  await network.run()
  assert.deepEqual(
    got,
    Array.from({ length: 200 }, (_, i) => i & 0xff),
  )
})

test('memory network: partitions break links and dials until healed; crash and restart', async () => {
  const network = new Network({ seed: 9 })
  const nodes = ['a', 'b', 'c'].map((n) => network.transport(n))
  for (const node of nodes) await node.listen()
  const ab = nodes[0].dial('b')
  const ac = nodes[0].dial('c')
  await network.run()
  const [toB, toC] = [await ab, await ac]
  const closed: string[] = []
  toB.events.on('close', ({ reason }) => closed.push(`b:${reason}`))
  toC.events.on('close', ({ reason }) => closed.push(`c:${reason}`))
  network.partition([['a', 'c'], ['b']])
  await network.run()
  assert.deepEqual(closed, ['b:partition'])
  assert.equal(toC.open, true)
  const failed = nodes[0].dial('b').then(
    () => undefined,
    (e: unknown) => e,
  )
  await network.run()
  assert.ok(isConcordError(await failed, ErrorCodes.UNREACHABLE))
  network.heal()
  const healed = nodes[0].dial('b')
  await network.run()
  assert.equal((await healed).open, true)

  network.crash('c')
  await network.run()
  assert.deepEqual(closed, ['b:partition', 'c:crash'])
  const toCrashed = nodes[0].dial('c').then(
    () => undefined,
    (e: unknown) => e,
  )
  await network.run()
  assert.ok(isConcordError(await toCrashed, ErrorCodes.UNREACHABLE))
  network.restart('c')
  const again = nodes[0].dial('c')
  await network.run()
  assert.equal((await again).open, true)
})

test('memory network: virtual timers run in time order', async () => {
  const network = new Network({ seed: 1 })
  const fired: number[] = []
  network.timers.setTimeout(() => fired.push(network.now), 30)
  const cancelled = network.timers.setTimeout(() => fired.push(-1), 20)
  network.timers.setTimeout(() => fired.push(network.now), 10)
  network.timers.clearTimeout(cancelled)
  await network.run()
  assert.deepEqual(fired, [10, 30])
})
