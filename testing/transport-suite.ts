/**
 * The transport conformance suite: one set of checks every transport
 * (memory, WebSocket, libp2p, a third party's) must pass, under any test
 * runner:
 *
 * ```ts
 * import { describe, it } from 'node:test'
 * import { runTransportTests } from 'concord-crdt/testing'
 *
 * runTransportTests({ describe, it }, 'my transport', async () => {
 *   const server = new MyTransport()
 *   const address = await server.listen()
 *   const client = new MyTransport()
 *   return { server, address, client, teardown: async () => { await client.stop(); await server.stop() } }
 * })
 * ```
 *
 * Checked: both ends of a dial get an open connection with the right
 * direction; frames (empty ones included) arrive whole and in order both
 * ways; a large frame arrives whole; a close is seen once by each end and
 * a send after it rejects with `CONCORD_CLOSED`; many connections each carry
 * their own frames; `stop` closes every connection on both ends. Ordering
 * and exactly-once checks assume a fault-free link.
 */
import assert from 'node:assert/strict'
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { Connection, Transport } from '../transports/transport.ts'
import { Prng } from '../transports/memory/prng.ts'
import { DEFAULT_TEST_TIMEOUT_MS, timedTest, type TestRunner } from './runner.ts'

/** What one test needs: a listening transport, its address and a dialer. */
export interface TransportSetup {
  /** A transport that listens at `address`. */
  readonly server: Transport
  /** The address to dial. */
  readonly address: string
  /** A transport that dials (may be the same object as `server` for some transports). */
  readonly client: Transport
  /** Stops everything the setup created (called after every test, pass or fail). */
  teardown(): Promise<void>
}

/** Options of {@link runTransportTests}. */
export interface TransportTestOptions {
  /** Size of the large-frame check (default 1 MiB). */
  readonly largeFrameBytes?: number
  /** Connections opened at once by the many-connections check (default 20). */
  readonly connections?: number
  /** Per-test timeout (default 60 s). */
  readonly timeoutMs?: number
}

/** Resolves with the next `event` payload of an emitter-like object. */
function next<T>(events: { once(event: string, listener: (payload: T) => void): unknown }, event: string): Promise<T> {
  return new Promise((resolve) => events.once(event, resolve))
}

/** Collects `count` messages of a connection. */
function collect(connection: Connection, count: number): Promise<Uint8Array[]> {
  const frames: Uint8Array[] = []
  return new Promise((resolve) => {
    if (count === 0) return resolve(frames)
    const off = connection.events.on('message', (frame) => {
      frames.push(frame.slice())
      if (frames.length === count) {
        off()
        resolve(frames)
      }
    })
  })
}

/** Dials and waits for both ends. */
async function connect(setup: TransportSetup): Promise<{ outbound: Connection; inbound: Connection }> {
  const accepted = next<Connection>(setup.server.events as never, 'connection')
  const outbound = await setup.client.dial(setup.address)
  const inbound = await accepted
  return { outbound, inbound }
}

function frame(random: Prng, maxBytes: number, tag: number): Uint8Array {
  const bytes = new Uint8Array(4 + random.int(0, maxBytes))
  new DataView(bytes.buffer).setUint32(0, tag)
  for (let i = 4; i < bytes.length; i++) bytes[i] = random.int(0, 255)
  return bytes
}

/**
 * Registers the transport conformance tests for one transport with
 * `runner`; `makeSetup` is called once per test.
 */
export function runTransportTests(runner: TestRunner, name: string, makeSetup: () => Promise<TransportSetup>, options: TransportTestOptions = {}): void {
  const largeBytes = options.largeFrameBytes ?? 1024 * 1024
  const many = options.connections ?? 20
  const timeoutMs = options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS
  const test = (title: string, body: () => Promise<void>): void => timedTest(runner, title, timeoutMs, body)

  runner.describe(`transport conformance: ${name}`, () => {
    test('connect: both ends get an open connection with the right direction', async () => {
      const setup = await makeSetup()
      try {
        const { outbound, inbound } = await connect(setup)
        assert.equal(outbound.direction, 'outbound')
        assert.equal(inbound.direction, 'inbound')
        assert.ok(outbound.open && inbound.open)
        assert.notEqual(outbound.id, inbound.id)
        assert.equal(typeof outbound.remoteAddress, 'string')
        assert.equal(typeof inbound.remoteAddress, 'string')
      } finally {
        await setup.teardown()
      }
    })

    test('frames arrive whole and in order, both ways', async () => {
      const setup = await makeSetup()
      try {
        const { outbound, inbound } = await connect(setup)
        const random = new Prng(7)
        const toServer = Array.from({ length: 200 }, (_, i) => frame(random, 2000, i))
        const toClient = Array.from({ length: 200 }, (_, i) => frame(random, 2000, 1000 + i))
        toServer.push(new Uint8Array(0)) // an empty frame is a frame
        const gotServer = collect(inbound, toServer.length)
        const gotClient = collect(outbound, toClient.length)
        await Promise.all([
          (async () => {
            for (const f of toServer) await outbound.send(f)
          })(),
          (async () => {
            for (const f of toClient) await inbound.send(f)
          })(),
        ])
        assert.deepEqual(await gotServer, toServer)
        assert.deepEqual(await gotClient, toClient)
      } finally {
        await setup.teardown()
      }
    })

    test('a large frame arrives whole', async () => {
      const setup = await makeSetup()
      try {
        const { outbound, inbound } = await connect(setup)
        const big = frame(new Prng(3), 0, 1)
        const payload = new Uint8Array(largeBytes)
        payload.set(big)
        for (let i = 4; i < payload.length; i++) payload[i] = (i * 31) & 0xff
        const got = collect(inbound, 1)
        await outbound.send(payload)
        const [received] = await got
        assert.equal(received.length, payload.length)
        assert.deepEqual(received, payload)
      } finally {
        await setup.teardown()
      }
    })

    test('close is seen by both ends exactly once; send after close rejects with CONCORD_CLOSED', async () => {
      const setup = await makeSetup()
      try {
        for (const closer of ['outbound', 'inbound'] as const) {
          const ends = await connect(setup)
          const counts = { outbound: 0, inbound: 0 }
          const closed = Promise.all(
            (['outbound', 'inbound'] as const).map(
              (side) =>
                new Promise<void>((resolve) => {
                  ends[side].events.on('close', () => {
                    counts[side]++
                    resolve()
                  })
                }),
            ),
          )
          ends[closer].close('test')
          ends[closer].close('again') // idempotent
          await closed
          // give a late duplicate close event a chance to show up
          await new Promise((resolve) => setTimeout(resolve, 20))
          assert.deepEqual(counts, { outbound: 1, inbound: 1 }, `closed by ${closer}`)
          assert.equal(ends.outbound.open, false)
          assert.equal(ends.inbound.open, false)
          for (const side of ['outbound', 'inbound'] as const) {
            await assert.rejects(ends[side].send(new Uint8Array([1])), (e) => isConcordError(e, ErrorCodes.CLOSED))
          }
        }
      } finally {
        await setup.teardown()
      }
    })

    test(`many connections (${many}) each carry their own frames`, async () => {
      const setup = await makeSetup()
      try {
        const pairs: Array<{ outbound: Connection; inbound: Connection }> = []
        for (let i = 0; i < many; i++) pairs.push(await connect(setup))
        const random = new Prng(11)
        const sent = pairs.map((_, i) => Array.from({ length: 10 }, (_, j) => frame(random, 300, i * 100 + j)))
        const received = pairs.map((pair, i) => collect(pair.inbound, sent[i].length))
        const echoes = pairs.map((pair, i) => collect(pair.outbound, sent[i].length))
        for (const pair of pairs) pair.inbound.events.on('message', (f) => void pair.inbound.send(f.slice()))
        await Promise.all(
          pairs.map(async (pair, i) => {
            for (const f of sent[i]) await pair.outbound.send(f)
          }),
        )
        for (let i = 0; i < many; i++) {
          assert.deepEqual(await received[i], sent[i])
          assert.deepEqual(await echoes[i], sent[i])
        }
        const ids = new Set(pairs.flatMap((p) => [p.inbound.id, p.outbound.id]))
        assert.equal(ids.size, many * 2)
      } finally {
        await setup.teardown()
      }
    })

    test('stop closes every connection, on both ends', async () => {
      const setup = await makeSetup()
      try {
        const pairs: Array<{ outbound: Connection; inbound: Connection }> = []
        for (let i = 0; i < 3; i++) pairs.push(await connect(setup))
        const closes = pairs.flatMap((pair) => [next(pair.outbound.events as never, 'close'), next(pair.inbound.events as never, 'close')])
        await setup.server.stop()
        await Promise.all(closes)
        for (const pair of pairs) {
          assert.equal(pair.inbound.open, false)
          assert.equal(pair.outbound.open, false)
        }
      } finally {
        await setup.teardown()
      }
    })
  })
}
