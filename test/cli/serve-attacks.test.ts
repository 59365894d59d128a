/**
 * Attacks on a real `concord serve --token` process over real sockets on
 * 127.0.0.x: floods before the handshake, floods of expensive requests by
 * a peer that may read nothing, oversized counts and lengths in every
 * message type, 1,000 idle connections and slowloris. For each: the server
 * lives, its RSS stays under {@link RSS_BOUND_MIB}, two legitimate peers keep
 * exchanging writes through it while the attack runs, and the store, opened
 * again, holds nothing the attacker sent. (Convergence is asserted, never a
 * latency: the latency figures are in bench/attacks.bench.ts.)
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { createPeer } from '../../peer/index.ts'
import { MessageType, encodeMessage } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { frame, handshake, helloFrame, rawClient, sendHelloAndAuth, varUint, type RawClient } from '../helpers/raw-client.ts'
import { legitPair, startServe } from './attack-helpers.ts'
import { cliJson } from './helpers.ts'

/** RSS the server must stay under during every attack (it starts at about 115 MiB). */
const RSS_BOUND_MIB = 400

/** The names a folder holds, per `concord inspect`. */
async function namesIn(dir: string): Promise<string[]> {
  const run = await cliJson<{ names: Array<{ name: string }> }>(['inspect', '--dir', dir])
  return run.json.names.map((n) => n.name).sort()
}

/** A CHUNK frame announcing `count` parts of a `total`-byte message, carrying one byte. */
function hugeChunk(id: number, count: number, total: number): Uint8Array {
  return frame(MessageType.chunk, ...varUint(id), 0, ...varUint(count), ...varUint(total), 1, 0)
}

test('unauthenticated floods: CHUNKs announcing 32M parts, data frames, oversized and repeated HELLOs are refused before anything is decoded; the server lives', {
  timeout: 120_000,
}, async () => {
  const root = await tempDir('concord-attack-preauth-')
  const dir = join(root.path, 'relay')
  const server = await startServe(dir, ['--token', 'T'])
  const pair = await legitPair(server.url, { writer: 'T', reader: 'T' })
  const attackers: Array<{ label: string; client: RawClient }> = []
  const open = async (label: string): Promise<RawClient> => {
    const client = await rawClient(server.url)
    attackers.push({ label, client })
    return client
  }
  try {
    await pair.roundTrip()
    const attack = (async () => {
      // Six connections of four such CHUNKs each used to kill the server (V8 heap out of memory).
      for (let c = 0; c < 40; c++) {
        const client = await open('chunks')
        for (let id = 0; id < 4; id++) client.send(hugeChunk(id, 32 * 1024 * 1024, 32 * 1024 * 1024))
      }
      for (let c = 0; c < 10; c++) {
        const client = await open('versions and requests')
        client.send(frame(MessageType.versions, ...varUint(2 ** 50)))
        for (let i = 0; i < 100; i++) client.send(frame(MessageType.request))
      }
      ;(await open('a delta first')).send(
        encodeMessage({ type: 'delta', seq: 1, entry: { name: 'evil', replicaType: 'gcounter', delta: new Uint8Array([1, 1, 0, 0, 0, 0, 0]) } }),
      )
      ;(await open('an oversized hello')).send(
        encodeMessage({
          type: 'hello',
          minVersion: 1,
          maxVersion: 2,
          agentId: agentId('big'),
          token: '',
          window: 8,
          extensions: [],
          maxFrameBytes: 1 << 20,
          filter: { names: Array.from({ length: 4000 }, (_, i) => `name-${i}-${'x'.repeat(20)}`) },
        }),
      )
      const twice = await open('two hellos')
      twice.send(helloFrame('twice'))
      twice.send(helloFrame('twice'))
      await sendHelloAndAuth(await open('a wrong secret'), 'wrong', 'guess')
      const sneaky = await open('a wrong secret, then data')
      await sendHelloAndAuth(sneaky, 'sneaky', 'guess')
      sneaky.send(encodeMessage({ type: 'delta', seq: 1, entry: { name: 'evil', replicaType: 'gcounter', delta: new Uint8Array([1]) } }))
    })()
    for (let i = 0; i < 5; i++) await pair.roundTrip()
    await attack
    await Promise.all(attackers.map(({ client }) => client.closed))
    const reasons = new Map<string, Set<string>>()
    for (const { label, client } of attackers) {
      const refuse = client.received.find((m) => m.type === 'refuse')
      if (!reasons.has(label)) reasons.set(label, new Set())
      reasons.get(label)!.add(refuse?.type === 'refuse' ? refuse.reason : 'closed without a refusal')
    }
    const expected: Record<string, string[]> = {
      chunks: ['protocol'],
      'versions and requests': ['protocol'],
      'a delta first': ['protocol'],
      'an oversized hello': ['limit'],
      'two hellos': ['protocol'],
      'a wrong secret': ['auth'],
      'a wrong secret, then data': ['auth'], // the data frame closes it, after the proof check under way refuses it
    }
    for (const [label, want] of Object.entries(expected)) assert.deepEqual([...reasons.get(label)!], want, label)
    assert.ok(server.alive(), server.stderr())
    const rss = await server.rssMiB()
    assert.ok(rss < RSS_BOUND_MIB, `server RSS ${rss.toFixed(0)} MiB`)
    await pair.roundTrip()
  } finally {
    for (const { client } of attackers) client.ws.terminate()
    await pair.close()
    assert.equal(await server.stop(), 0, server.stderr())
  }
  assert.deepEqual(await namesIn(dir), ['legit'], 'nothing the attackers sent was stored')
  await root.remove()
})

test('a peer that may read nothing floods REQUEST and VERSIONS, another that may read floods VERSIONS: rate-limited per session, work yields, legit writes keep flowing', {
  timeout: 180_000,
}, async () => {
  const root = await tempDir('concord-attack-requests-')
  const dir = join(root.path, 'relay')
  // 2,000 names, more than the store's cache: each REQUEST used to hydrate and list them all (over 90 s for 2,000 REQUESTs).
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
  const server = await startServe(dir, ['--acl', aclFile])
  const pair = await legitPair(server.url, { writer: 'w', reader: 'r' })
  const mallory = await rawClient(server.url)
  const eve = await rawClient(server.url)
  try {
    await handshake(mallory, 'mallory', 'm')
    await handshake(eve, 'eve', 'e')
    await pair.roundTrip()
    const emptyVersions = frame(MessageType.versions, 0)
    for (let i = 0; i < 2000; i++) mallory.send(frame(MessageType.request))
    for (let i = 0; i < 200; i++) mallory.send(emptyVersions)
    for (let i = 0; i < 200; i++) eve.send(emptyVersions)
    // While the floods are being worked through, writes still go round.
    for (let i = 0; i < 10; i++) await pair.roundTrip()
    assert.ok(server.alive(), server.stderr())
    const rss = await server.rssMiB()
    assert.ok(rss < RSS_BOUND_MIB, `server RSS ${rss.toFixed(0)} MiB`)
    // The floods were answered within the rate: far fewer VERSIONS than REQUESTs, and nothing to mallory.
    const versionsToMallory = mallory.received.filter((m) => m.type === 'versions').length
    assert.ok(versionsToMallory < 200, `mallory got ${versionsToMallory} VERSIONS for 2,000 REQUESTs`)
    const toMallory = mallory.received.filter((m) => m.type === 'delta' || m.type === 'transaction').length
    assert.equal(toMallory, 0, 'a peer that may read nothing is sent no data')
    assert.ok(!mallory.isClosed() && !eve.isClosed(), 'rate-limited, not disconnected')
  } finally {
    mallory.ws.terminate()
    eve.ws.terminate()
    await pair.close()
    assert.equal(await server.stop(), 0, server.stderr())
  }
  await root.remove()
})

test('oversized counts and lengths in every message type, after the handshake: dropped as malformed, the peer refused; nothing applied', {
  timeout: 120_000,
}, async () => {
  const root = await tempDir('concord-attack-sizes-')
  const dir = join(root.path, 'relay')
  const server = await startServe(dir, ['--token', 'T'])
  const pair = await legitPair(server.url, { writer: 'T', reader: 'T' })
  const attackers: RawClient[] = []
  try {
    const huge = varUint(2 ** 50)
    const str = (text: string) => [...varUint(Buffer.byteLength(text)), ...Buffer.from(text)]
    const frames = [
      frame(MessageType.versions, ...huge),
      frame(MessageType.versions, 1, ...huge),
      frame(MessageType.transaction, 1, ...huge),
      frame(MessageType.transaction, 1, 1, ...str('evil'), ...str('gcounter'), ...huge),
      frame(MessageType.delta, 1, ...huge),
      frame(MessageType.delta, 1, ...str('evil'), ...huge),
      frame(MessageType.delta, 1, ...str('evil'), ...str('gcounter'), ...huge),
      frame(MessageType.chunk, 0, 0, ...huge, ...huge, 1, 0),
      frame(MessageType.chunk, 0, 0, ...varUint(32 * 1024 * 1024), ...varUint(32 * 1024 * 1024), ...huge),
      frame(MessageType.reject, 1, ...huge),
      frame(MessageType.reject, 1, ...str('evil'), ...huge),
      frame(MessageType.refuse + 0, 3, ...huge),
      frame(MessageType.ack, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10), // 2^53
      frame(MessageType.done, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
      frame(MessageType.hello, 1, 1, ...huge),
      frame(200, ...huge),
    ]
    for (const [i, bad] of frames.entries()) {
      const client = await rawClient(server.url)
      attackers.push(client)
      await handshake(client, `sizes-${i}`, 'T')
      // Each bad frame 17 times: the 17th malformed frame gets the peer refused (maxMalformed 16).
      for (let k = 0; k < 17; k++) client.send(bad)
      // Many partial messages announcing 32M parts: held in a map, nothing allocated for the parts.
      for (let id = 0; id < 50; id++) client.send(hugeChunk(1000 + id, 32 * 1024 * 1024, 32 * 1024 * 1024))
    }
    for (let i = 0; i < 5; i++) await pair.roundTrip()
    await until(() => attackers.filter((c) => c.isClosed()).length >= frames.length - 1, 'the attackers are refused', 30_000)
    // Every one but the last is refused for its malformed frames; a type this version does not know is ignored (forward compatibility).
    const refused = attackers.map((c) => c.received.some((m) => m.type === 'refuse' && m.reason === 'protocol'))
    assert.deepEqual(
      refused,
      frames.map((_, i) => i < frames.length - 1),
    )
    assert.ok(!attackers.at(-1)!.isClosed())
    assert.ok(server.alive(), server.stderr())
    const rss = await server.rssMiB()
    assert.ok(rss < RSS_BOUND_MIB, `server RSS ${rss.toFixed(0)} MiB`)
    await pair.roundTrip()
  } finally {
    for (const client of attackers) client.ws.terminate()
    await pair.close()
    assert.equal(await server.stop(), 0, server.stderr())
  }
  assert.deepEqual(await namesIn(dir), ['legit'])
  await root.remove()
})

/** A socket from `localAddress` that writes `text` one byte every `everyMs`; resolves its close with what it read. */
function trickle(port: number, localAddress: string, text: string, everyMs: number): { socket: Socket; closed: Promise<string> } {
  const socket = connect({ port, host: '127.0.0.1', localAddress })
  let read = ''
  let sent = 0
  socket.on('data', (data) => {
    read += data.toString('latin1')
  })
  socket.on('error', () => {})
  const timer = setInterval(() => {
    if (sent < text.length && !socket.destroyed) socket.write(text[sent++], 'latin1')
  }, everyMs)
  const closed = new Promise<string>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer)
      resolve(read)
    }),
  )
  return { socket, closed }
}

test('1,000 idle connections and slowloris (an upgrade request and a HELLO frame trickled byte by byte): closed by the timeouts, refused with 503 over the limit; legit writes keep flowing', {
  timeout: 120_000,
}, async () => {
  const root = await tempDir('concord-attack-idle-')
  const dir = join(root.path, 'relay')
  const server = await startServe(dir, ['--token', 'T'])
  const pair = await legitPair(server.url, { writer: 'T', reader: 'T' })
  const sockets: Socket[] = []
  const clients: RawClient[] = []
  let drip: ReturnType<typeof setInterval> | undefined
  try {
    const upgrade =
      `GET /concord HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'
    const closes: Array<Promise<string>> = []
    // 1,000 connections from ten addresses (100 each, under the per-address limit of 128):
    // 400 that send nothing, 300 that trickle an upgrade request, 300 WebSockets that never send a HELLO.
    for (let i = 0; i < 1000; i++) {
      const localAddress = `127.0.0.${2 + (i % 10)}`
      if (i < 400) {
        const silent = trickle(server.port, localAddress, '', 1000)
        sockets.push(silent.socket)
        closes.push(silent.closed)
      } else if (i < 700) {
        const slow = trickle(server.port, localAddress, upgrade, 200)
        sockets.push(slow.socket)
        closes.push(slow.closed)
      } else {
        const client = await rawClient(server.url, { localAddress })
        clients.push(client)
        closes.push(client.closed.then((code) => `ws ${code}`))
      }
    }
    // A WebSocket whose HELLO frame comes one byte every 500 ms (it would take 15 s) (the frame header is the WebSocket one, masked).
    const slowHello = await rawClient(server.url, { localAddress: '127.0.0.12' })
    clients.push(slowHello)
    const hello = helloFrame('slow')
    const raw = (slowHello.ws as unknown as { _socket: Socket })._socket
    const header = Buffer.from([0x82, 0x80 | hello.length, 0, 0, 0, 0])
    const bytes = Buffer.concat([header, Buffer.from(hello)])
    let at = 0
    drip = setInterval(() => {
      if (at < bytes.length && !raw.destroyed) raw.write(bytes.subarray(at, ++at))
    }, 500)
    // Over the total limit (1,024 sockets): answered 503 at once.
    const over: Array<Promise<string>> = []
    for (let i = 0; i < 100; i++) {
      const socket = connect({ port: server.port, host: '127.0.0.1', localAddress: '127.0.0.13' })
      let read = ''
      socket.on('data', (data) => {
        read += data.toString('latin1')
      })
      socket.on('error', () => {})
      socket.write(upgrade)
      sockets.push(socket)
      over.push(new Promise((resolve) => socket.once('close', () => resolve(read))))
    }
    for (let i = 0; i < 5; i++) await pair.roundTrip()
    const rss = await server.rssMiB()
    assert.ok(rss < RSS_BOUND_MIB, `server RSS ${rss.toFixed(0)} MiB with 1,000 idle connections`)
    const answers = await Promise.all(over)
    assert.ok(answers.filter((a) => a.startsWith('HTTP/1.1 503')).length >= 70, answers.map((a) => a.slice(0, 12)).join())
    // The handshake and upgrade timeouts (10 s) close every one of them; the trickled HELLO never completes.
    const outcomes = await Promise.all(closes)
    assert.ok(
      outcomes.slice(0, 400).every((read) => read.startsWith('HTTP/1.1 408')),
      'a socket that sends nothing is answered 408',
    )
    const trickled = outcomes.slice(400, 700)
    assert.ok(
      trickled.every((read) => read.startsWith('HTTP/1.1 408')),
      `a trickled upgrade request is answered 408: ${[...new Set(trickled.map((r) => r.slice(0, 20)))].join(' | ')}`,
    )
    await slowHello.closed
    clearInterval(drip)
    assert.ok(at < bytes.length, 'the trickled HELLO was cut off before it completed')
    assert.ok(server.alive(), server.stderr())
    await pair.roundTrip()
  } finally {
    clearInterval(drip)
    for (const socket of sockets) socket.destroy()
    for (const client of clients) client.ws.terminate()
    await pair.close()
    assert.equal(await server.stop(), 0, server.stderr())
  }
  await root.remove()
})
