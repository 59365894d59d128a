/**
 * Attack benchmarks: how long a legitimate peer's write takes to reach
 * another legitimate peer through a real `concord serve` process (2,000
 * names in its store, more than its cache holds) while an attack runs,
 * against the same round trip with no attack, in the same run. The attacks
 * run for the whole measurement: a peer whose access is `none` sending
 * REQUESTs (about 10,000 a second), a peer that may read sending empty
 * VERSIONS ("I hold nothing", about 1,000 a second), unauthenticated
 * connections sending CHUNKs that announce 32M parts (a new connection every
 * 20 ms), and 1,000 idle connections. The suite asserts only that writes get
 * through (test/cli/serve-attacks.test.ts); the latencies are here.
 */
import { writeFile } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { createPeer } from '../peer/index.ts'
import { MessageType } from '../sync/messages.ts'
import { legitPair, startServe, type LegitPair, type Server } from '../test/cli/attack-helpers.ts'
import { frame, handshake, rawClient, varUint, type RawClient } from '../test/helpers/raw-client.ts'
import { tempDir } from '../test/helpers/temp-dir.ts'
import type { Benchmark, Measurement } from './harness.ts'

const ROUND_TRIPS = 40

/** Round trips writer -> server -> reader, each timed from the write to the reader's change event, in ms. */
async function roundTrips(pair: LegitPair, count: number): Promise<number[]> {
  const mine = await pair.writer.counter('legit')
  const theirs = await pair.reader.counter('legit')
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const target = theirs.value() + 1
    const arrived = new Promise<void>((resolve) => {
      const off = theirs.on('change', () => {
        if (theirs.value() >= target) {
          off()
          resolve()
        }
      })
    })
    const started = performance.now()
    mine.increment()
    await arrived
    times.push(performance.now() - started)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return times
}

const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

/** An attack that runs until its `stop()`. */
interface Attack {
  readonly label: string
  start(server: Server): Promise<() => Promise<void>>
}

const attacks: Attack[] = [
  {
    label: 'REQUEST flood by a peer with access none',
    async start(server) {
      const client = await rawClient(server.url)
      await handshake(client, 'mallory', 'm')
      const timer = setInterval(() => {
        for (let i = 0; i < 100; i++) client.send(frame(MessageType.request))
      }, 10)
      return async () => {
        clearInterval(timer)
        client.ws.terminate()
      }
    },
  },
  {
    label: 'empty VERSIONS flood by a peer with read access',
    async start(server) {
      const client = await rawClient(server.url)
      await handshake(client, 'eve', 'e')
      const timer = setInterval(() => {
        for (let i = 0; i < 10; i++) client.send(frame(MessageType.versions, 0))
      }, 10)
      return async () => {
        clearInterval(timer)
        client.ws.terminate()
      }
    },
  },
  {
    label: 'unauthenticated CHUNK flood (32M parts announced)',
    async start(server) {
      const clients: RawClient[] = []
      let stopped = false
      const timer = setInterval(() => {
        void rawClient(server.url).then(
          (client) => {
            if (stopped) return client.ws.terminate()
            clients.push(client)
            for (let id = 0; id < 4; id++) client.send(frame(MessageType.chunk, ...varUint(id), 0, ...varUint(32 << 20), ...varUint(32 << 20), 1, 0))
          },
          () => {},
        )
      }, 20)
      return async () => {
        stopped = true
        clearInterval(timer)
        for (const client of clients) client.ws.terminate()
      }
    },
  },
  {
    label: '1,000 idle connections',
    async start(server) {
      const sockets: Socket[] = []
      for (let i = 0; i < 1000; i++) {
        const socket = connect({ port: server.port, host: '127.0.0.1', localAddress: `127.0.0.${2 + (i % 10)}` })
        socket.on('error', () => {})
        sockets.push(socket)
      }
      return async () => {
        for (const socket of sockets) socket.destroy()
      }
    },
  },
]

export const benchmarks: Benchmark[] = [
  {
    name: 'peer/attacks',
    async run(): Promise<Measurement[]> {
      const root = await tempDir('concord-bench-attacks-')
      const dir = join(root.path, 'relay')
      const seed = await createPeer({ agentId: 'relay', dir, durability: { mode: 'async', rpoMs: 50 }, cacheSize: 100 })
      for (let i = 0; i < 2000; i++) (await seed.counter(`n/${i}`)).increment(i + 1)
      await seed.close()
      const aclFile = join(root.path, 'acl.json')
      await writeFile(
        aclFile,
        JSON.stringify({
          tokens: { writer: 'w', reader: 'r', mallory: 'm', eve: 'e' },
          default: 'write',
          rules: [
            { peer: 'mallory', name: '*', access: 'none' },
            { peer: 'eve', name: '*', access: 'read' },
          ],
        }),
      )
      const measurements: Measurement[] = []
      try {
        for (const attack of attacks) {
          const server = await startServe(dir, ['--acl', aclFile])
          const pair = await legitPair(server.url, { writer: 'w', reader: 'r' })
          try {
            await roundTrips(pair, 5)
            const quiet = await roundTrips(pair, ROUND_TRIPS)
            const stop = await attack.start(server)
            await new Promise((resolve) => setTimeout(resolve, 500))
            const attacked = await roundTrips(pair, ROUND_TRIPS)
            const rss = await server.rssMiB()
            await stop()
            measurements.push({
              name: `legit write to another peer, p95, during: ${attack.label}`,
              value: percentile(attacked, 0.95),
              unit: 'ms',
              better: 'lower',
              baseline: { label: 'no attack', value: percentile(quiet, 0.95) },
              note: `median ${percentile(attacked, 0.5).toFixed(1)} ms, max ${Math.max(...attacked).toFixed(1)} ms (no attack: median ${percentile(quiet, 0.5).toFixed(1)}, max ${Math.max(...quiet).toFixed(1)}); server RSS ${rss.toFixed(0)} MiB${server.alive() ? '' : '; the server died'}`,
            })
          } finally {
            await pair.close()
            await server.stop()
          }
        }
      } finally {
        await root.remove()
      }
      return measurements
    },
  },
]
