/**
 * Peers over real WebSocket on 127.0.0.1 with real LevelDB folders: five
 * peers in a hub-and-spoke and in a chain converge on every type through
 * relays; `transact` stays atomic across SIGKILLs of a receiving child
 * process; malformed and oversized frames from a raw `ws` client are counted
 * and dropped, the peer stays up, other connections are unaffected, and a
 * client that keeps sending them is disconnected.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { WebSocket } from 'ws'
import type { Replica } from '../../crdt/replica.ts'
import { createPeer, type Peer } from '../../peer/index.ts'
import { Prng } from '../../transports/memory/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { firstDifference } from './helpers/compare.ts'
import { NAMES, mutate } from './helpers/peer-scenario.ts'
import { rawClient, sendFrame } from './helpers/raw-concord-client.ts'

const SEED = Number(process.env.CONCORD_SEED ?? 42)

async function openAll(peer: Peer): Promise<Map<string, Replica>> {
  const replicas = new Map<string, Replica>()
  for (const { name, type } of NAMES) replicas.set(name, await peer.open(name, type))
  return replicas
}

/** Five LevelDB peers wired by `wire`; each writes every type (and transactions); all must converge. */
async function fivePeers(topology: string, wire: (peers: Peer[]) => Promise<void>): Promise<void> {
  const dir = await tempDir(`concord-${topology}-`)
  const peers: Peer[] = []
  try {
    for (let i = 0; i < 5; i++) peers.push(await createPeer({ agentId: `p${i}`, dir: join(dir.path, `p${i}`) }))
    const holders = await Promise.all(peers.map(async (peer) => ({ name: peer.agentId, replicas: await openAll(peer) })))
    const random = new Prng(SEED)
    // writes before the links exist (anti-entropy carries them) ...
    for (const holder of holders) for (const { name } of NAMES) mutate(holder.replicas.get(name)!, random, `${holder.name}.pre.${name}`)
    await wire(peers)
    // ... and live, with transactions
    for (let round = 0; round < 5; round++) {
      for (const [i, holder] of holders.entries()) {
        await peers[i].transact(() => {
          for (const { name } of NAMES) if (random.chance(0.4)) mutate(holder.replicas.get(name)!, random, `${holder.name}.${round}.${name}`)
        })
        const { name } = random.pick(NAMES)
        mutate(holder.replicas.get(name)!, random, `${holder.name}.${round}.single`)
      }
    }
    ;(holders[0].replicas.get('gset') as unknown as { add(v: string): void }).add('from-p0')
    ;(holders[4].replicas.get('gset') as unknown as { add(v: string): void }).add('from-p4')
    let difference: string | undefined
    await until(() => (difference = firstDifference(holders)) === undefined, `${topology}: five peers converge`, 30_000).catch((error) => {
      throw new Error(`${error.message}: ${difference} (seed ${SEED})`)
    })
    const far = holders[4].replicas.get('gset')!.value() as string[]
    assert.ok(far.includes('from-p0') && (holders[0].replicas.get('gset')!.value() as string[]).includes('from-p4'))
    for (const peer of peers) assert.equal(peer.stats().totals.malformed, 0)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
}

test('five peers, hub and spoke over WebSocket: every type converges, spokes reach each other through the hub', () =>
  fivePeers('hub', async ([hub, ...spokes]) => {
    const { url } = await hub.listen()
    await Promise.all(spokes.map((spoke) => spoke.connect(url)))
  }))

test('five peers in a chain over WebSocket: every type converges end to end through three relays', () =>
  fivePeers('chain', async (peers) => {
    for (let i = 0; i < peers.length - 1; i++) {
      const { url } = await peers[i].listen()
      await peers[i + 1].connect(url)
    }
  }))

// ------------------------------------------------------------ transact across SIGKILL

interface ReceiverState {
  a: number
  b: number
  c: number
}

/** Starts the receiver child; resolves with its `opened` state (read from disk before any sync). */
function startReceiver(
  dir: string,
  url: string,
  dieAfter: number,
  onState: (state: ReceiverState) => void,
): Promise<{ child: ChildProcess; opened: ReceiverState; exited: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/peer/fixtures/transact-receiver.ts', dir, url, String(dieAfter)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let buffer = ''
    let stderr = ''
    let settled = false
    const exited = new Promise<void>((done) => child.once('exit', () => done()))
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      const lines = buffer.split('\n')
      buffer = lines.pop()!
      for (const line of lines) {
        const [kind, json] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)]
        if (kind === 'opened' && !settled) {
          settled = true
          resolve({ child, opened: JSON.parse(json), exited })
        } else if (kind === 'state') {
          onState(JSON.parse(json))
        }
      }
    })
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8')
    })
    child.once('exit', (code, signal) => {
      if (!settled) reject(new Error(`receiver exited before opening (code ${code}, signal ${signal}): ${stderr}`))
    })
  })
}

test('transact is atomic across SIGKILLs of the receiver: after every restart no name shows half a transaction, then it resyncs fully', {
  timeout: 120_000,
}, async () => {
  const dir = await tempDir('concord-transact-kill-')
  const source = await createPeer({ agentId: 'source', dir: join(dir.path, 'source') })
  let child: ChildProcess | undefined
  let writing = true
  let writer: Promise<void> = Promise.resolve()
  try {
    const { url } = await source.listen()
    const a = await source.counter('tx/a')
    const b = await source.set<number>('tx/b')
    const c = await source.register<number>('tx/c')
    let written = 0
    writer = (async () => {
      while (writing) {
        await source.transact(() => {
          written++
          a.increment()
          b.add(written)
          c.set(written)
        })
        if (written % 16 === 0) await new Promise((resolve) => setImmediate(resolve))
      }
    })()

    const random = new Prng(SEED)
    const openedStates: ReceiverState[] = []
    let latest: ReceiverState = { a: 0, b: 0, c: 0 }
    // Odd restarts are killed by the parent at a random moment (resync or
    // live stream); even ones kill themselves right after their n-th
    // committed unit (n small: inside the resync that follows the restart).
    const kills = 8
    for (let k = 0; k <= kills; k++) {
      const dieAfter = k < kills && k % 2 === 0 ? random.int(1, 3) : 0
      const started = await startReceiver(join(dir.path, 'receiver'), url, dieAfter, (state) => {
        latest = state
      })
      child = started.child
      const { opened } = started
      openedStates.push(opened)
      // every name shows every transaction or none of it: a = |b| = c
      assert.equal(opened.b, opened.a, `restart ${k}: counter ${opened.a} but set of ${opened.b} (seed ${SEED})`)
      assert.equal(opened.c, opened.a, `restart ${k}: counter ${opened.a} but register ${opened.c} (seed ${SEED})`)
      if (k === kills) break
      // kill at a random moment: during the resync or the live stream
      if (dieAfter === 0) {
        await new Promise((resolve) => setTimeout(resolve, random.int(100, 800)))
        child.kill('SIGKILL')
      }
      await started.exited
      child = undefined
    }
    writing = false
    await writer
    await until(() => latest.a === written && latest.b === written && latest.c === written, `the receiver resyncs all ${written} transactions`, 60_000)
    assert.ok(
      openedStates.some((s) => s.a > 0),
      `some restart found data on disk: ${JSON.stringify(openedStates)}`,
    )
    assert.ok(new Set(openedStates.map((s) => s.a)).size > 2, `the kills landed at different points: ${JSON.stringify(openedStates)}`)
  } finally {
    writing = false
    await writer.catch(() => undefined)
    child?.kill('SIGKILL')
    await source.close()
    await dir.remove()
  }
})

// ------------------------------------------------------------ malformed and oversized frames

const send = sendFrame

test('malformed and oversized frames from a raw ws client: counted and dropped, the peer stays up, others are unaffected, a persistent sender is cut off', {
  timeout: 60_000,
}, async () => {
  const dir = await tempDir('concord-bad-frames-')
  const MAX_FRAME = 64 * 1024
  const server = await createPeer({ agentId: 'server', dir: join(dir.path, 'server'), maxFrameBytes: MAX_FRAME })
  const good = await createPeer({ agentId: 'good', dir: join(dir.path, 'good') })
  const clients: WebSocket[] = []
  try {
    const { url } = await server.listen()
    await good.connect(url)
    const counter = await good.counter('c')
    const serverCounter = await server.counter('c')
    counter.increment()
    await until(() => serverCounter.value() === 1, 'the good peer syncs')

    // a client that passed the handshake sends garbage: each frame is counted and dropped
    const noisy = await rawClient(url, true)
    clients.push(noisy.ws)
    const random = new Prng(SEED)
    const garbage = (length: number): Uint8Array => {
      const bytes = Uint8Array.from({ length }, () => random.int(0, 255))
      bytes[0] = 1 // the right frame format, so it is judged as a message
      bytes[1] = random.pick([4, 5, 6, 9]) // a known message type with a broken body
      return bytes
    }
    const bad = [garbage(3), garbage(40), new Uint8Array([1, 6, 0x80]), garbage(MAX_FRAME + 1), garbage(MAX_FRAME * 4)]
    for (const frame of bad) await send(noisy.ws, frame)
    await until(() => server.stats().totals.malformed === bad.length, `the server counted ${bad.length} malformed frames`)
    assert.equal(noisy.ws.readyState, WebSocket.OPEN, 'a few bad frames are tolerated')
    counter.increment()
    await until(() => serverCounter.value() === 2, 'the good peer is unaffected')

    // it keeps sending them: disconnected with a protocol refusal
    for (let i = 0; i < 20 && noisy.ws.readyState === WebSocket.OPEN; i++) await send(noisy.ws, garbage(16)).catch(() => undefined)
    await noisy.closed
    assert.ok(
      noisy.received.some((m) => m.type === 'refuse' && m.reason === 'protocol'),
      'refused with reason protocol',
    )
    assert.ok(server.stats().totals.malformed > 16)

    // frames over the WebSocket limit, a text frame, a wrong frame format before the handshake: that connection only is closed
    const huge = await rawClient(url, true)
    clients.push(huge.ws)
    await send(huge.ws, garbage(2 * 1024 * 1024)).catch(() => undefined)
    assert.equal(await huge.closed, 1009, 'closed as too big by the WebSocket layer')
    const text = await rawClient(url, false)
    clients.push(text.ws)
    text.ws.send('hello?')
    await text.closed
    const alien = await rawClient(url, false)
    clients.push(alien.ws)
    await send(alien.ws, new Uint8Array([99, 1, 2, 3]))
    await alien.closed
    assert.ok(alien.received.some((m) => m.type === 'refuse' && m.reason === 'version'))

    // the server is still up and the good connection still works both ways
    assert.deepEqual(good.connectedPeers, ['server'])
    counter.increment()
    serverCounter.increment(10)
    await until(() => serverCounter.value() === 13 && counter.value() === 13, 'the good peer still syncs both ways')
    const late = await createPeer({ agentId: 'late' })
    try {
      await late.connect(url)
      await until(async () => (await late.counter('c')).value() === 13, 'a new peer still connects and syncs')
    } finally {
      await late.close()
    }
  } finally {
    for (const ws of clients) ws.terminate()
    await good.close()
    await server.close()
    await dir.remove()
  }
})
