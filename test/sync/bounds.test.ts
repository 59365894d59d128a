/**
 * Bounded before trusted, at the session (sync/intake.ts, sync/pre-handshake.ts,
 * sync/chunking.ts, sync/request-gate.ts, the byte window, answers in
 * slices), over the simulated network: what a remote may send before its
 * HELLO is accepted, the budgets of reassembly and of the receive queue, the
 * rate of expensive requests, and answers built in slices that stay one
 * snapshot.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { createReplica } from '../../crdt/registry.ts'
import { agentId } from '../../crdt/agent-id.ts'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import { windowBytesExtension, windowBytesOf } from '../../sync/extensions.ts'
import { decodeMessage, encodeMessage, MessageType, type DecodedMessage, type HelloMessage } from '../../sync/messages.ts'
import type { SyncSession } from '../../sync/session.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection } from '../../transports/transport.ts'
import { frame, helloFrame, varUint } from '../helpers/raw-client.ts'
import { MemoryHost, mutate, type MemoryHostOptions } from './helpers/memory-host.ts'
import { SimPeer, connectPair, type PeerSessionOptions } from './helpers/sim.ts'

/** A hand-driven remote end: a raw connection to `b`. */
async function raw(network: Network, b: SimPeer, id = 'raw'): Promise<{ connection: Connection; received: DecodedMessage[]; session: SyncSession }> {
  const before = b.history.length
  const dialing = network.transport(id).dial(`memory://${b.name}`)
  await network.run()
  const connection = await dialing
  const received: DecodedMessage[] = []
  connection.events.on('message', (bytes) => {
    try {
      received.push(decodeMessage(bytes))
    } catch {
      /* a chunk of nothing */
    }
  })
  await network.run()
  return { connection, received, session: b.history[before] }
}

/** Completes the handshake by hand (protocol 2 with an empty proof: `b` requires no credentials). */
async function greet(network: Network, remote: { connection: Connection; received: DecodedMessage[] }, id = 'raw'): Promise<void> {
  await remote.connection.send(helloFrame(id))
  await network.run()
  await remote.connection.send(encodeMessage({ type: 'auth', proof: new Uint8Array(0) }))
  await network.run()
  assert.ok(
    remote.received.some((m) => m.type === 'hello-ok'),
    JSON.stringify(remote.received.map((m) => m.type)),
  )
  await remote.connection.send(encodeMessage({ type: 'hello-ok', version: 2 }))
  await network.run()
}

async function listening(network: Network, options: PeerSessionOptions = {}, host: MemoryHostOptions = {}): Promise<SimPeer> {
  const b = new SimPeer(network, 'b', host, options)
  await b.listen()
  return b
}

test('before the HELLO is accepted, any frame but one bounded HELLO, AUTH, HELLO-OK or REFUSE closes the connection, undecoded', async () => {
  const network = new Network({ seed: 31 })
  const b = await listening(network, { maxHelloBytes: 4096 })
  const early: Array<[string, Uint8Array]> = [
    ['VERSIONS with a count of 2^50', frame(MessageType.versions, ...varUint(2 ** 50))],
    ['a DELTA', encodeMessage({ type: 'delta', seq: 1, entry: { name: 'x', replicaType: 'gcounter', delta: new Uint8Array([1]) } })],
    ['a TRANSACTION', frame(MessageType.transaction, 1, 1)],
    ['a CHUNK announcing 32M parts', frame(MessageType.chunk, 0, 0, ...varUint(32 << 20), ...varUint(32 << 20), 1, 0)],
    ['an ACK', frame(MessageType.ack, 1)],
    ['a DONE', frame(MessageType.done, 1)],
    ['a REQUEST', frame(MessageType.request)],
    ['a REJECT', frame(MessageType.reject, 1)],
    ['a type this version does not know', frame(200, 1, 2, 3)],
    ['one byte', new Uint8Array([1])],
  ]
  for (const [i, [what, bytes]] of early.entries()) {
    const remote = await raw(network, b, `early-${i}`)
    await remote.connection.send(bytes)
    await network.run()
    assert.equal(remote.session.state, 'closed', what)
    assert.equal(remote.session.stats.handshakeViolations, 1, what)
    assert.equal(remote.session.stats.malformed, 0, `${what}: never decoded`)
    assert.ok(
      remote.received.some((m) => m.type === 'refuse' && m.reason === 'protocol'),
      what,
    )
  }
  // A second HELLO, a second AUTH: closed.
  const twice = await raw(network, b, 'twice')
  await twice.connection.send(helloFrame('twice'))
  await twice.connection.send(helloFrame('twice'))
  await network.run()
  assert.equal(twice.session.state, 'closed')
  const auths = await raw(network, b, 'auths')
  await auths.connection.send(encodeMessage({ type: 'auth', proof: new Uint8Array(0) }))
  await auths.connection.send(encodeMessage({ type: 'auth', proof: new Uint8Array(0) }))
  await network.run()
  assert.equal(auths.session.state, 'closed')
  // A HELLO over the limit: refused with limit, before it is decoded.
  const big = await raw(network, b, 'big')
  const filter = { names: Array.from({ length: 400 }, (_, i) => `a-long-name-${i}`) }
  await big.connection.send(encodeMessage({ ...(decodeMessage(helloFrame('big')) as HelloMessage), filter }))
  await network.run()
  assert.equal(big.session.state, 'closed')
  assert.ok(big.received.some((m) => m.type === 'refuse' && m.reason === 'limit'))
  // What a peer that speaks the protocol sends first gets through, in any order: AUTH before HELLO, then HELLO-OK.
  const fine = await raw(network, b, 'fine')
  await fine.connection.send(encodeMessage({ type: 'auth', proof: new Uint8Array(0) }))
  await fine.connection.send(helloFrame('fine'))
  await network.run()
  await fine.connection.send(encodeMessage({ type: 'hello-ok', version: 2 }))
  await network.run()
  assert.equal(fine.session.state, 'open')
  assert.equal(fine.session.stats.handshakeViolations, 0)
})

test('a connection that never completes its handshake is closed by the timeout, and counted', async () => {
  const network = new Network({ seed: 32 })
  const b = await listening(network, { handshakeTimeoutMs: 1000 })
  const silent = await raw(network, b, 'silent')
  network.timers.setTimeout(() => {}, 1500)
  await network.run()
  b.tick()
  await network.run()
  assert.equal(silent.session.state, 'closed')
  assert.equal(silent.session.stats.handshakeViolations, 1)
})

test('reassembly: nothing is allocated from a CHUNK count; the bytes held are budgeted (refused with limit)', async () => {
  const network = new Network({ seed: 33 })
  const b = await listening(network, { maxReassemblyBytes: 20_000 })
  const remote = await raw(network, b)
  await greet(network, remote)
  const before = process.memoryUsage().heapUsed
  // 200 partial messages announcing 4M parts each (four are held at once): the old reassembler made an array of 4M slots for each.
  for (let id = 0; id < 200; id++) await remote.connection.send(frame(MessageType.chunk, ...varUint(id), 0, ...varUint(4 << 20), ...varUint(4 << 20), 1, 0))
  await network.run()
  const grown = (process.memoryUsage().heapUsed - before) / (1 << 20)
  assert.ok(grown < 24, `heap grew by ${grown.toFixed(1)} MiB`)
  assert.equal(remote.session.state, 'open')
  assert.ok(remote.session.inboundBytes.reassembly < 20_000)
  // Parts that would hold more than the budget: refused with limit.
  for (let index = 0; index < 30 && remote.session.state === 'open'; index++) {
    await remote.connection.send(encodeMessage({ type: 'chunk', id: 1000, index, count: 100, totalBytes: 100_000, bytes: new Uint8Array(1000) }))
    await network.run()
  }
  assert.equal(remote.session.state, 'closed')
  assert.ok(remote.received.some((m) => m.type === 'refuse' && m.reason === 'limit'))
})

test('the receive queue has a byte budget: a sender that ignores the byte window is refused with limit; one that keeps to it never is', async () => {
  const network = new Network({ seed: 34 })
  const slow = { persist: () => new Promise<void>((resolve) => network.timers.setTimeout(resolve, 20)) }
  const b = await listening(network, { maxInboxBytes: 64 * 1024 }, slow)
  // A raw remote that sends 40 commits of 4 KiB at once, ignoring the window b announced (8 KiB).
  const flood = await raw(network, b, 'flood')
  await greet(network, flood, 'flood')
  for (let seq = 1; seq <= 40; seq++) {
    const set = createReplica('gset', { agentId: agentId(`w${seq}`) }) as unknown as { add(v: string): void; snapshot(): Uint8Array }
    set.add('y'.repeat(4000))
    await flood.connection.send(encodeMessage({ type: 'delta', seq, entry: { name: `n${seq}`, replicaType: 'gset', delta: set.snapshot() } }))
  }
  await network.run()
  assert.equal(flood.session.state, 'closed')
  assert.ok(flood.received.some((m) => m.type === 'refuse' && m.reason === 'limit'))

  // A real sender keeps within the window: 100 changes of ~3 KiB all arrive, the queue stays under the budget.
  const a = new SimPeer(network, 'a')
  const { ab, ba } = await connectPair(network, a, b)
  const set = a.host.open('big', 'gset')
  let worst = 0
  for (let i = 0; i < 100; i++) (set as unknown as { add(v: string): void }).add(`${i}-${'z'.repeat(3000)}`)
  await network.run({
    until: () => {
      worst = Math.max(worst, ba.inboundBytes.queued)
      return false
    },
  })
  assert.equal(ba.state, 'open')
  assert.ok(worst <= 64 * 1024, `queued ${worst} bytes`)
  assert.deepEqual(b.host.values().big, a.host.values().big)
  assert.equal(ab.stats.rejectedByRemote, 0)
})

test('expensive requests are rate-limited per session: a REQUEST flood gets a few VERSIONS, a VERSIONS flood a few answers; what waits is served later', async () => {
  const network = new Network({ seed: 35 })
  const b = await listening(network, { requestRate: { perSecond: 2, burst: 4 } })
  for (let i = 0; i < 20; i++) mutate(b.host.open(`n${i}`, 'gcounter'), network.random, 'x')
  const remote = await raw(network, b)
  await greet(network, remote)
  const versions = () => remote.received.filter((m) => m.type === 'versions').length
  const dones = () => remote.received.filter((m) => m.type === 'done').length
  const beforeVersions = versions()
  for (let i = 0; i < 500; i++) await remote.connection.send(frame(MessageType.request))
  await network.run()
  const served = versions() - beforeVersions
  assert.ok(served >= 1 && served <= 5, `${served} VERSIONS for 500 REQUESTs`)
  assert.ok(remote.session.stats.deferredRequests + remote.session.stats.coalescedRequests >= 495)
  // Empty VERSIONS ("I hold nothing"): each answer carries every name.
  const beforeDones = dones()
  for (let i = 0; i < 100; i++) await remote.connection.send(frame(MessageType.versions, 0))
  await network.run()
  assert.ok(dones() - beforeDones <= 4, `${dones() - beforeDones} answers for 100 VERSIONS`)
  // A second later, the waiting ones are served (one REQUEST and one VERSIONS stood for all the rest).
  const waitingVersions = versions()
  const waitingDones = dones()
  network.timers.setTimeout(() => {}, 1_000)
  await network.run()
  b.tick()
  await network.run()
  assert.equal(versions(), waitingVersions + 1)
  assert.equal(dones(), waitingDones + 1)
  assert.equal(remote.session.state, 'open')
})

/** A memory host whose answers yield between slices; on the first yield it runs `onFirstYield`. */
class YieldingHost extends MemoryHost {
  yields = 0
  onFirstYield: (() => void) | undefined
  async yieldTurn(): Promise<void> {
    this.yields++
    if (this.yields === 1) this.onFirstYield?.()
    await Promise.resolve()
  }
}

test('an answer built in slices is still one snapshot: a transaction made between two slices is in it whole', async () => {
  const network = new Network({ seed: 36 })
  const host = new YieldingHost('b')
  const b = new SimPeer(network, 'b', {}, {}, host)
  await b.listen()
  // 200 counters: the answer to a's VERSIONS takes several slices of 64 names.
  const names = Array.from({ length: 200 }, (_, i) => `c${String(i).padStart(3, '0')}`)
  for (const name of names) (host.open(name, 'gcounter') as GCounterReplica).increment(1)
  host.onFirstYield = () =>
    host.transact(() => {
      // c000 is in the first slice (its delta already computed), c199 in the last.
      ;(host.replicas.get('c000') as GCounterReplica).increment(1000)
      ;(host.replicas.get('c199') as GCounterReplica).increment(1000)
    })
  // What b sends: its connection's send, wrapped once the session is attached (the answer comes later).
  const fromB: DecodedMessage[] = []
  b.transport.events.on('connection', (connection) => {
    const send = connection.send.bind(connection)
    ;(connection as { send: Connection['send'] }).send = (bytes) => {
      fromB.push(decodeMessage(bytes))
      return send(bytes)
    }
  })
  const a = new SimPeer(network, 'a')
  await connectPair(network, a, b)
  assert.ok(host.yields >= 3, `${host.yields} yields`)
  // The answer is b's first commit: on its own it holds the whole transaction.
  const answer = fromB.find((m) => m.type === 'transaction' || m.type === 'delta')
  assert.ok(answer?.type === 'transaction')
  const valueIn = (name: string): unknown => {
    const replica = createReplica('gcounter', { agentId: agentId('probe') })
    for (const entry of answer.entries) if (entry.name === name) replica.applyDelta(entry.delta)
    return replica.value()
  }
  assert.deepEqual([valueIn('c000'), valueIn('c199'), valueIn('c100')], [1001, 1001, 1])
  assert.deepEqual(a.host.values(), host.values())
})

/**
 * A memory host that reads only the names it holds, and takes turns to hold
 * them (as a store that hydrates them does): `hold` is how the protocol
 * gets at a name. Counts how many names it held at once.
 */
class HoldingHost extends MemoryHost {
  private readonly held = new Map<string, number>()
  maxHeld = 0
  onHold: ((names: readonly string[]) => void) | undefined
  onDelta: ((name: string) => void) | undefined

  async hold(names: readonly string[]): Promise<() => void> {
    this.onHold?.(names)
    for (let i = 0; i < 3; i++) await Promise.resolve()
    for (const name of names) this.held.set(name, (this.held.get(name) ?? 0) + 1)
    this.maxHeld = Math.max(this.maxHeld, this.held.size)
    return () => {
      for (const name of names) {
        const count = this.held.get(name)! - 1
        if (count === 0) this.held.delete(name)
        else this.held.set(name, count)
      }
    }
  }

  private check(name: string): void {
    if (!this.held.has(name)) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" is not held`)
  }

  override version(name: string): Uint8Array {
    this.check(name)
    return super.version(name)
  }

  override deltaSince(name: string, version: Uint8Array | null): Uint8Array | null {
    this.check(name)
    this.onDelta?.(name)
    return super.deltaSince(name, version)
  }
}

test('a host that holds what it reads: VERSIONS and answers hold a slice of names at a time, and an answer stays one snapshot while transactions land as its stale names are held again', async () => {
  const network = new Network({ seed: 37 })
  const host = new HoldingHost('b')
  // The VERSIONS answer (reconciliation reads digests first, which would move the hooks below).
  const b = new SimPeer(network, 'b', {}, { reconcile: false }, host)
  await b.listen()
  const names = Array.from({ length: 200 }, (_, i) => `c${String(i).padStart(3, '0')}`)
  for (const name of names) (host.open(name, 'gcounter') as GCounterReplica).increment(1)
  const counter = (name: string): GCounterReplica => host.replicas.get(name) as GCounterReplica
  // Between two slices of the answer: a transaction over a name computed already and one computed later.
  let first = true
  host.onDelta = (name) => {
    if (name !== 'c064' || !first) return
    first = false
    host.transact(() => {
      counter('c000').increment(1000)
      counter('c199').increment(1000)
    })
  }
  // While c000 and c199, stale (committed to during the answer), are held to be computed at the end: a transaction with a name outside what is held.
  let second = true
  host.onHold = (held) => {
    if (held.length !== 2 || !held.includes('c000') || !held.includes('c199') || !second) return
    second = false
    host.transact(() => {
      counter('c000').increment(10)
      counter('c100').increment(10)
    })
  }
  const fromB: DecodedMessage[] = []
  b.transport.events.on('connection', (connection) => {
    const send = connection.send.bind(connection)
    ;(connection as { send: Connection['send'] }).send = (bytes) => {
      fromB.push(decodeMessage(bytes))
      return send(bytes)
    }
  })
  const a = new SimPeer(network, 'a', {}, { reconcile: false })
  await connectPair(network, a, b)
  assert.ok(!first && !second, 'both transactions landed during the answer')
  assert.ok(host.maxHeld <= 64, `at most a slice held at once (held ${host.maxHeld})`)
  const answer = fromB.find((m) => m.type === 'transaction' || m.type === 'delta')
  assert.ok(answer?.type === 'transaction')
  const valueIn = (name: string): unknown => {
    const replica = createReplica('gcounter', { agentId: agentId('probe') })
    for (const entry of answer.entries) if (entry.name === name) replica.applyDelta(entry.delta)
    return replica.value()
  }
  // Both transactions whole: the names they touched as after both.
  assert.deepEqual([valueIn('c000'), valueIn('c199'), valueIn('c100'), valueIn('c150')], [1011, 1001, 11, 1])
  assert.deepEqual(a.host.values(), host.values())
})

test('the window-bytes HELLO extension: encoded as a varUint, a malformed one is ignored', () => {
  const hello = decodeMessage(helloFrame('x')) as HelloMessage
  assert.equal(windowBytesOf(hello), undefined)
  assert.equal(windowBytesOf({ ...hello, extensions: [windowBytesExtension(12345)] }), 12345)
  assert.equal(windowBytesOf({ ...hello, extensions: [{ key: 'window-bytes', value: new Uint8Array([0x80]) }] }), undefined)
  assert.equal(windowBytesOf({ ...hello, extensions: [{ key: 'window-bytes', value: new Uint8Array([0]) }] }), undefined)
})
