import { test } from 'node:test'
import assert from 'node:assert/strict'
import { handshakeProof, helloNonce, NONCE_BYTES } from '../../sync/credentials.ts'
import { decodeMessage, encodeMessage, PROTOCOL_VERSION, type DecodedMessage, type HelloMessage, type Message } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection } from '../../transports/transport.ts'
import { mutate } from './helpers/memory-host.ts'
import { SimPeer, connectPair } from './helpers/sim.ts'

const SECRET = 'a-long-random-shared-secret-0123456789'
const secretBytes = new TextEncoder().encode(SECRET)

/** True when `frame` contains `needle` anywhere. */
function contains(frame: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= frame.length; i++) {
    for (let j = 0; j < needle.length; j++) if (frame[i + j] !== needle[j]) continue outer
    return true
  }
  return false
}

/** Every frame the network carries, as sent, with the name of the peer that sent it. */
function tap(network: Network): Array<{ from: string; frame: Uint8Array }> {
  const frames: Array<{ from: string; frame: Uint8Array }> = []
  const original = network.transport.bind(network)
  network.transport = ((name: string) => {
    const transport = original(name)
    const record = (connection: Connection): Connection => {
      const send = connection.send.bind(connection)
      connection.send = (frame) => {
        frames.push({ from: name, frame: frame.slice() })
        return send(frame)
      }
      return connection
    }
    const dial = transport.dial.bind(transport)
    transport.dial = async (address, options) => record(await dial(address, options))
    transport.events.on('connection', record)
    return transport
  }) as typeof network.transport
  return frames
}

/** A hand-driven dialer to `b`: records what it receives; `hello()` of `b` once it came. */
async function rawDialer(
  network: Network,
  id: string,
  target = 'b',
): Promise<{
  connection: Connection
  received: DecodedMessage[]
  remoteHello: () => HelloMessage
  send: (message: Message | Uint8Array) => Promise<void>
}> {
  const received: DecodedMessage[] = []
  const dialing = network
    .transport(id)
    .dial(`memory://${target}`)
    .then((connection) => {
      connection.events.on('message', (frame) => received.push(decodeMessage(frame)))
      return connection
    })
  await network.run()
  const connection = await dialing
  return {
    connection,
    received,
    remoteHello: () => received.find((m): m is HelloMessage => m.type === 'hello')!,
    send: (message) => connection.send(message instanceof Uint8Array ? message : encodeMessage(message)),
  }
}

function helloOf(id: string, nonce: Uint8Array | undefined, options: { token?: string; maxVersion?: number } = {}): Message {
  return {
    type: 'hello',
    minVersion: 1,
    maxVersion: options.maxVersion ?? 2,
    agentId: agentId(id),
    token: options.token ?? '',
    filter: {},
    maxFrameBytes: 1 << 20,
    window: 64,
    extensions: nonce ? [{ key: 'nonce', value: nonce }] : [],
  }
}

const freshNonce = (): Uint8Array => crypto.getRandomValues(new Uint8Array(NONCE_BYTES))

/** The proof `prover` (holding `secret`) sends to `verifier`, given both HELLO nonces. */
function proofFor(secret: string, prover: string, proverNonce: Uint8Array, verifier: string, verifierNonce: Uint8Array): Uint8Array {
  return handshakeProof(secret, { version: 2, proverId: prover, verifierId: verifier, proverNonce, verifierNonce, binding: new Uint8Array(0) })
}

test('handshake v2: a shared secret is proved, never sent; both sides open at protocol 2 and sync', async () => {
  assert.equal(PROTOCOL_VERSION, 2)
  const network = new Network({ seed: 101 })
  const frames = tap(network)
  const a = new SimPeer(network, 'a', { token: SECRET }, { token: SECRET })
  const b = new SimPeer(network, 'b', { token: SECRET }, { token: SECRET })
  await b.listen()
  mutate(a.host.open('notes', 'yjs'), network.random, 'a')
  const { ab, ba } = await connectPair(network, a, b)
  assert.equal(ab.state, 'open')
  assert.equal(ba.state, 'open')
  assert.deepEqual(a.host.values(), b.host.values())
  const decoded = frames.map(({ frame }) => decodeMessage(frame))
  assert.equal(decoded.filter((m) => m.type === 'auth').length, 2, 'each side proved once')
  for (const m of decoded) if (m.type === 'hello') assert.equal(m.token, '', 'no token in HELLO')
  assert.ok(
    frames.every(({ frame }) => !contains(frame, secretBytes)),
    'the secret is in no frame',
  )
  assert.equal(ab.stats.commitsOut, 1)
})

test('handshake v2: a wrong secret is refused before any data, on either side', async () => {
  const network = new Network({ seed: 102 })
  const b = new SimPeer(network, 'b', { token: SECRET })
  await b.listen()
  b.host.open('private', 'gcounter')
  mutate(b.host.replicas.get('private')!, network.random, 'b')

  const intruder = new SimPeer(network, 'intruder', {}, { token: 'a-guess' })
  mutate(intruder.host.open('evil', 'yjs'), network.random, 'x')
  const first = await connectPair(network, intruder, b)
  assert.equal(first.ab.state, 'closed')
  assert.equal(first.ba.state, 'closed')
  assert.equal(first.ab.stats.commitsIn + first.ba.stats.commitsIn, 0)
  assert.deepEqual([...b.host.replicas.keys()], ['private'])
  assert.deepEqual([...intruder.host.replicas.keys()], ['evil'])

  // The dialer checks the listener too: a listener with the wrong secret is refused by a dialer that requires the right one.
  const impostor = new SimPeer(network, 'impostor', {}, { token: 'not-it' })
  await impostor.listen()
  const careful = new SimPeer(network, 'careful', { token: SECRET }, { token: SECRET })
  const second = await connectPair(network, careful, impostor)
  assert.equal(second.ab.state, 'closed')
  assert.equal(second.ba.state, 'closed')
})

test('handshake v2: frames captured from a good handshake, replayed on a new connection, are refused', async () => {
  const network = new Network({ seed: 103 })
  const frames = tap(network)
  const b = new SimPeer(network, 'b', { token: SECRET })
  await b.listen()
  const a = new SimPeer(network, 'a', {}, { token: SECRET })
  mutate(a.host.open('notes', 'yjs'), network.random, 'a')
  const good = await connectPair(network, a, b)
  assert.equal(good.ba.state, 'open')
  // Everything a sent: HELLO, AUTH, HELLO-OK, VERSIONS, its commit, ACKs.
  const fromA = frames.filter(({ from }) => from === 'a').map(({ frame }) => frame)
  assert.deepEqual(
    fromA.slice(0, 2).map((frame) => decodeMessage(frame).type),
    ['hello', 'auth'],
  )
  assert.ok(
    fromA.some((frame) => decodeMessage(frame).type === 'delta'),
    'the capture holds a commit',
  )
  good.ab.close('done')
  b.host.replicas.clear()
  await network.run()

  const raw = await rawDialer(network, 'replayer')
  for (const frame of fromA) await raw.send(frame)
  await network.run()
  const refuse = raw.received.find((m) => m.type === 'refuse')
  assert.ok(refuse && refuse.type === 'refuse' && refuse.reason === 'auth', JSON.stringify(raw.received.map((m) => m.type)))
  assert.ok(!raw.received.some((m) => m.type === 'auth' || m.type === 'versions' || m.type === 'hello-ok'), 'the listener proved nothing and sent no data')
  assert.equal(b.host.replicas.size, 0)
})

test('handshake v2: the listener proves nothing to a stranger, and a proof relayed between connections fails', async () => {
  const network = new Network({ seed: 104 })
  const b = new SimPeer(network, 'b', { token: SECRET }, { token: SECRET })
  await b.listen()
  const raw = await rawDialer(network, 'stranger')
  const bNonce = helloNonce(raw.remoteHello())!
  assert.equal(bNonce.length, NONCE_BYTES)
  // A stranger claiming another peer's id sends its HELLO and waits: no AUTH comes from b.
  await raw.send(helloOf('c', freshNonce()))
  await network.run({ maxTime: 1_000 })
  assert.deepEqual(
    raw.received.map((m) => m.type),
    ['hello'],
    'b waits for the dialer to prove first',
  )
  // An AUTH computed for another connection's nonces is refused.
  await raw.send({ type: 'auth', proof: proofFor(SECRET, 'c', freshNonce(), 'b', freshNonce()) })
  await network.run()
  assert.deepEqual(
    raw.received.map((m) => (m.type === 'refuse' ? `refuse:${m.reason}` : m.type)),
    ['hello', 'refuse:auth'],
  )
})

test('handshake v2: a right proof that arrives before its HELLO is held and accepted; a second AUTH is ignored', async () => {
  const network = new Network({ seed: 105 })
  const b = new SimPeer(network, 'b', { token: SECRET })
  await b.listen()
  const raw = await rawDialer(network, 'early')
  const bNonce = helloNonce(raw.remoteHello())!
  const nonce = freshNonce()
  const auth: Message = { type: 'auth', proof: proofFor(SECRET, 'early', nonce, 'b', bNonce) }
  await raw.send(auth)
  await raw.send(helloOf('early', nonce))
  await raw.send(auth)
  await raw.send({ type: 'hello-ok', version: 2 })
  await network.run()
  assert.deepEqual(
    raw.received.slice(0, 3).map((m) => m.type),
    ['hello', 'auth', 'hello-ok'],
  )
  assert.equal(b.history[0].state, 'open')
  assert.equal(b.history[0].stats.unexpected, 1, 'the second AUTH')
})

test('handshake: a remote that claims our own id, echoes our nonce, or speaks v2 without a nonce is refused', async () => {
  const network = new Network({ seed: 106 })
  const b = new SimPeer(network, 'b', { token: SECRET })
  await b.listen()
  const cases: Array<[string, (bNonce: Uint8Array) => Message, string]> = [
    ['own id', () => helloOf('b', freshNonce()), 'auth'],
    ['echoed nonce', (bNonce) => helloOf('x', bNonce), 'auth'],
    ['no nonce', () => helloOf('x', undefined), 'protocol'],
  ]
  for (const [what, hello, reason] of cases) {
    const raw = await rawDialer(network, `raw-${what.replace(/ /g, '-')}`)
    await raw.send(hello(helloNonce(raw.remoteHello())!))
    await network.run()
    const refuse = raw.received.find((m) => m.type === 'refuse')
    assert.ok(refuse?.type === 'refuse' && refuse.reason === reason, `${what}: ${JSON.stringify(raw.received)}`)
  }
})

test('handshake: proofs bound to different channel bindings fail (a relay between two connections)', async () => {
  const network = new Network({ seed: 107 })
  const b = new SimPeer(network, 'b', { token: SECRET }, { channelBinding: new Uint8Array([1, 2, 3]) })
  await b.listen()
  const a = new SimPeer(network, 'a', {}, { token: SECRET, channelBinding: new Uint8Array([9, 9, 9]) })
  const refused = await connectPair(network, a, b)
  assert.equal(refused.ab.state, 'closed')
  const c = new SimPeer(network, 'c', {}, { token: SECRET, channelBinding: new Uint8Array([1, 2, 3]) })
  const ok = await connectPair(network, c, b)
  assert.equal(ok.ab.state, 'open')
})

test('handshake: a protocol-1 peer still syncs with a protocol-2 peer, both directions', async () => {
  const network = new Network({ seed: 108 })
  const v1 = new SimPeer(network, 'old', {}, { versions: { min: 1, max: 1 } })
  const v2 = new SimPeer(network, 'new')
  await v1.listen()
  await v2.listen()
  mutate(v1.host.open('from-old', 'orset'), network.random, 'o')
  mutate(v2.host.open('from-new', 'automerge'), network.random, 'n')
  const oldDials = await connectPair(network, v1, v2)
  assert.equal(oldDials.ab.state, 'open')
  assert.equal(oldDials.ba.state, 'open')
  assert.deepEqual(v1.host.values(), v2.host.values())
  oldDials.ab.close('next')
  await network.run()
  mutate(v2.host.replicas.get('from-new')!, network.random, 'n2')
  const newDials = await connectPair(network, v2, v1)
  assert.equal(newDials.ab.state, 'open')
  assert.deepEqual(v1.host.values(), v2.host.values())
  assert.equal(newDials.ab.stats.commitsOut, 1, 'only what changed')
})

test('handshake: protocol-1 bearer tokens are refused by default and accepted with legacyBearer, both directions', async () => {
  const network = new Network({ seed: 109 })
  // A protocol-1 dialer presents its token in the clear; a v2 listener that requires it refuses by default.
  const strict = new SimPeer(network, 'strict', { token: SECRET })
  await strict.listen()
  const oldClient = new SimPeer(network, 'old-client', {}, { versions: { min: 1, max: 1 }, token: SECRET })
  const messages: string[] = []
  strict.transport.events.on('connection', () =>
    queueMicrotask(() => {
      strict.history.at(-1)!.events.on('refused', (r) => messages.push(r.message))
    }),
  )
  const refused = await connectPair(network, oldClient, strict)
  assert.equal(refused.ab.state, 'closed')
  assert.ok(
    messages.some((m) => /protocol 1 only.*legacyBearer/.test(m)),
    messages.join(),
  )
  // ... and accepts it with legacyBearer.
  const lenient = new SimPeer(network, 'lenient', { token: SECRET }, { legacyBearer: true })
  await lenient.listen()
  const accepted = await connectPair(network, oldClient, lenient)
  assert.equal(accepted.ab.state, 'open')

  // A v2 dialer never sends its token in the clear by default, so a protocol-1 listener that requires it refuses,
  // and the dialer is told why.
  const oldServer = new SimPeer(network, 'old-server', { token: SECRET }, { versions: { min: 1, max: 1 } })
  await oldServer.listen()
  const newClient = new SimPeer(network, 'new-client', {}, { token: SECRET })
  const remote: string[] = []
  const attach = newClient.attach.bind(newClient)
  newClient.attach = (connection, options) => {
    const session = attach(connection, options)
    session.events.on('refused', (r) => remote.push(`${r.by}:${r.reason}:${r.message}`))
    return session
  }
  const { ab: session } = await connectPair(network, newClient, oldServer)
  assert.equal(session.state, 'closed')
  assert.ok(
    remote.some((r) => /^remote:auth:.*protocol 1 only.*legacyBearer/.test(r)),
    remote.join(),
  )
  const migrating = new SimPeer(network, 'migrating', {}, { token: SECRET, legacyBearer: true })
  const ok = await connectPair(network, migrating, oldServer)
  assert.equal(ok.ab.state, 'open')
})

test('handshake: an AUTH proof of the wrong length does not decode', () => {
  const frame = encodeMessage({ type: 'auth', proof: new Uint8Array(31) })
  assert.throws(() => decodeMessage(frame), /auth: a proof has 32 bytes/)
  assert.deepEqual(decodeMessage(encodeMessage({ type: 'auth', proof: new Uint8Array(0) })), { type: 'auth', proof: new Uint8Array(0) })
})
