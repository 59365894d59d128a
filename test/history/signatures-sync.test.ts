/**
 * Signed provenance on the wire (issue 16, "Trust"): real peers (LevelDB
 * folders, WebSocket on 127.0.0.1). A change signed at A and relayed by hub
 * H verifies at B, which knows A's key; a relay that rewrites the author,
 * the message or the bytes is refused at B (`CONCORD_BAD_SIGNATURE`,
 * counted, the session goes on), as is a peer that claims another's author
 * id; peers from before the `signatures` extension still sync both ways.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as Y from 'yjs'
import { logKey } from '../../persistence/format/keys.ts'
import { decodeRecord } from '../../persistence/format/record.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import type { DecodedMessage } from '../../sync/messages.ts'
import { provenanceExtension, signaturesExtension } from '../../sync/provenance.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until, untilSynced } from '../helpers/wait.ts'
import { rawClient } from '../peer/helpers/raw-concord-client.ts'
import { connectThroughHub, keyPair, withPeers } from './helpers.ts'

const signatures = async (peer: Peer, name: string) =>
  (await peer.history(name)).map((h) => [h.agent, h.message ?? null, h.signature?.status ?? 'unsigned', h.signature?.signer ?? null])

/**
 * Until `peer` has finished its first anti-entropy with each of `remotes`:
 * they answered it, so from then on their commits reach it live (with their
 * PROVENANCE) rather than in an answer (merged state, logged under the sender).
 */
const rejects = (messages: readonly DecodedMessage[]) => messages.filter((m) => m.type === 'reject') as Array<DecodedMessage & { code: string; seq: number }>

test('a change signed at A and relayed by hub H verifies at B; H relays the signature it cannot bind', async () => {
  const alice = await keyPair()
  await withPeers([{ agentId: 'hub' }, { agentId: 'A', signingKey: alice.key }, { agentId: 'B', authorKeys: { A: alice.peerId } }], async ([hub, a, b]) => {
    const { url } = await hub.listen()
    await a.connect(url)
    await b.connect(url)
    await untilSynced(hub, 'A', 'B')
    await untilSynced(b, 'hub')
    const tasks = await a.counter('tasks')
    const seen = await a.set('seen')
    await a.transact(() => tasks.increment(3), { message: 'three tasks found', meta: { tool: 'planner' } })
    // Two names in one unit: each record is signed with the unit's provenance.
    await a.transact(
      () => {
        tasks.increment(1)
        seen.add('x')
      },
      { message: 'both' },
    )
    tasks.increment(1) // a plain change: signed too, so it travels with its PROVENANCE
    const atB = await b.counter('tasks')
    await until(() => atB.value() === 5, 'B has every change')
    await until(async () => (await b.history('tasks')).length === 3 && (await b.history('seen')).length === 1, 'logged on B')
    const verified = (message: string | null) => ['A', message, 'verified', alice.peerId]
    assert.deepEqual(await signatures(a, 'tasks'), [verified('three tasks found'), verified('both'), verified(null)])
    assert.deepEqual(await signatures(b, 'tasks'), [verified('three tasks found'), verified('both'), verified(null)], 'on B, two hops away')
    assert.deepEqual(await signatures(b, 'seen'), [verified('both')])
    // The hub knows no key of A's: the signatures verify with the key they carry, which nothing binds to A there.
    await until(async () => (await hub.history('tasks')).length === 3, 'logged on H')
    assert.deepEqual(
      (await hub.history('tasks')).map((h) => h.signature?.status),
      ['unbound', 'unbound', 'unbound'],
    )
    const report = await b.store.verify('tasks')
    assert.deepEqual(report.problems, [])
    assert.deepEqual(report.signatures, { verified: 3, unbound: 0, unsigned: 0 })
    assert.equal(b.stats().admission.badSignatures, 0)
  })
})

test('a relay that rewrites the author, the message or the bytes of a signed change is refused at B; the genuine one is taken', async () => {
  const alice = await keyPair()
  await withPeers(
    [
      { agentId: 'A', signingKey: alice.key },
      { agentId: 'B', authorKeys: { A: alice.peerId } },
    ],
    async ([a, b]) => {
      const notes = await a.yjs('notes')
      await a.transact(() => notes.doc.getText('t').insert(0, 'ship it'), { message: 'approved' })
      await a.flush()
      const record = decodeRecord((await a.store.storage.get(logKey('notes', 1)))!, { name: 'notes', seq: 1 })
      assert.ok(record.signature, 'A signed its record')
      const { url } = await b.listen()
      const hub = await rawClient(url, true, { peer: 'hub', extensions: [provenanceExtension(), signaturesExtension()] })
      try {
        const entry = (delta: Uint8Array) => ({ name: 'notes', replicaType: 'yjs' as const, delta })
        const claim = { agent: 'A', message: 'approved', authored: record.hlc, signatures: [record.signature] }
        const other = new Y.Doc()
        other.getText('t').insert(0, 'delete everything')
        const forged = [
          { ...claim, message: 'rejected' },
          { ...claim, agent: 'carol' },
          { ...claim, authored: { wall: record.hlc.wall - 60_000, logical: 0 } },
          claim, // with other bytes below
          { ...claim, signatures: undefined }, // stripped
        ]
        let seq = 0
        for (const [i, provenance] of forged.entries()) {
          seq++
          await hub.send({ type: 'provenance', seq, ...provenance })
          await hub.send({ type: 'delta', seq, entry: entry(i === 3 ? Y.encodeStateAsUpdate(other) : record.delta) })
        }
        await until(() => rejects(hub.received).length === forged.length, 'every forgery refused')
        assert.deepEqual(
          rejects(hub.received).map((r) => r.code),
          forged.map(() => 'CONCORD_BAD_SIGNATURE'),
        )
        assert.deepEqual(await b.names(), [], 'nothing applied, no name created')
        assert.equal(b.stats().admission.badSignatures, forged.length)
        // The session goes on: the genuine change is taken and verifies.
        seq++
        await hub.send({ type: 'provenance', seq, ...claim })
        await hub.send({ type: 'delta', seq, entry: entry(record.delta) })
        await until(async () => (await b.names()).length === 1, 'the genuine change applies')
        assert.deepEqual(await signatures(b, 'notes'), [['A', 'approved', 'verified', alice.peerId]])
        assert.equal((await b.yjs('notes')).doc.getText('t').toString(), 'ship it')
      } finally {
        hub.ws.close()
      }
    },
  )
})

test('a peer that claims another author id is refused; its own changes still sync under its own id', async () => {
  const alice = await keyPair()
  const eve = await keyPair()
  await withPeers(
    [
      { agentId: 'B', authorKeys: { A: alice.peerId } },
      { agentId: 'E', signingKey: eve.key },
    ],
    async ([b, e]) => {
      const { url } = await b.listen()
      await e.connect(url)
      await untilSynced(b, 'E')
      const board = await e.set('board')
      await e.transact(() => board.add('mine'), { message: 'by eve' })
      await until(async () => (await b.history('board').catch(() => [])).some((h) => h.message === 'by eve'), 'E’s own change reaches B')
      await e.transact(() => board.add('fake approval'), { agent: 'A', message: 'approved by A' })
      await until(() => b.stats().admission.badSignatures === 1, 'the claim is refused')
      await until(() => e.stats().totals.rejectedByRemote === 1, 'E is told (REJECT)')
      const history = await b.history('board')
      assert.ok(
        history.every((h) => h.agent !== 'A'),
        'nothing is logged as A on B',
      )
      assert.deepEqual(
        history.filter((h) => h.message === 'by eve').map((h) => [h.agent, h.signature?.status]),
        [['E', 'unbound']],
      )
    },
  )
})

test('peers from before the signatures extension still sync both ways', async () => {
  const alice = await keyPair()
  const bob = await keyPair()
  await withPeers(
    [
      { agentId: 'hub', sync: { signatures: false } },
      { agentId: 'A', signingKey: alice.key, authorKeys: { B: bob.peerId } },
      { agentId: 'B', signingKey: bob.key, authorKeys: { A: alice.peerId } },
    ],
    async ([hub, a, b]) => {
      const _url = await connectThroughHub(hub, a, b)
      const atA = await a.set('plan')
      await a.transact(() => atA.add('from A'), { message: 'A writes' })
      const atB = await b.set('plan')
      await until(() => (atB.value() as string[]).includes('from A'), 'A’s change reaches B through the old hub')
      await b.transact(() => atB.add('from B'), { message: 'B writes' })
      await until(() => (atA.value() as string[]).includes('from B'), 'B’s change reaches A through the old hub')
      await until(async () => (await hub.history('plan')).length === 2, 'logged on the hub')
      // The old hub takes provenance but no signature was sent to it.
      assert.deepEqual(
        (await hub.history('plan')).map((h) => [h.agent, h.message, h.signature]),
        [
          ['A', 'A writes', undefined],
          ['B', 'B writes', undefined],
        ],
      )
      // Its unsigned claims of authors whose keys they know are not believed: logged under the hub that sent them, not refused.
      await until(async () => (await b.history('plan')).length === 2 && (await a.history('plan')).length === 2, 'logged on A and B')
      assert.deepEqual(
        (await b.history('plan')).map((h) => [h.agent, h.signature?.status ?? 'unsigned']),
        [
          ['hub', 'unsigned'],
          ['B', 'verified'],
        ],
      )
      assert.deepEqual(
        (await a.history('plan')).map((h) => [h.agent, h.signature?.status ?? 'unsigned']),
        [
          ['A', 'verified'],
          ['hub', 'unsigned'],
        ],
      )
      assert.equal(a.stats().admission.badSignatures + b.stats().admission.badSignatures, 0)
    },
  )
})

test('the signing key: libp2p.privateKey by default, checked at createPeer; an id that is the key’s PeerId needs no authorKeys; requireSignatures refuses claims nothing proves', async () => {
  const own = await keyPair()
  const other = await keyPair()
  const dir = await tempDir('concord-signatures-options-')
  try {
    // Bad keys and bindings are refused before anything opens.
    for (const options of [
      { agentId: 'x', signingKey: new Uint8Array(31) },
      { agentId: 'x', signingKey: { type: 'secp256k1', raw: new Uint8Array(32) } },
      { agentId: 'x', authorKeys: { ana: 'not-a-peer-id' } },
      { agentId: own.peerId, signingKey: other.key },
    ] as const) {
      await assert.rejects(
        createPeer(options as PeerOptions),
        (e: unknown) => (e as { code?: string }).code === 'CONCORD_INVALID_ARGUMENT',
        JSON.stringify(Object.keys(options)),
      )
    }
    await withPeers(
      [
        // Signs with its libp2p key (no signingKey), and its id is that key's PeerId: self-certifying.
        { agentId: own.peerId, libp2p: { privateKey: own.key } },
        { agentId: 'strict', requireSignatures: true },
        { agentId: 'plain' },
      ],
      async ([signer, strict, plain]) => {
        const { url } = await strict.listen()
        await signer.connect(url)
        await plain.connect(url)
        await untilSynced(strict, own.peerId, 'plain')
        const log = await signer.set('log')
        await signer.transact(() => log.add('signed by the libp2p key'), { message: 'self-certified' })
        await until(async () => (await strict.history('log').catch(() => [])).length === 1, 'the strict peer takes it')
        assert.deepEqual(
          (await strict.history('log')).map((h) => [h.agent, h.signature]),
          [[own.peerId, { status: 'verified', signer: own.peerId }]],
          'verified with no authorKeys: the id names the key',
        )
        // An unsigned claim, from a peer that could carry signatures: refused under requireSignatures.
        const atPlain = await plain.set('log')
        await until(() => (atPlain.value() as string[]).length === 1, 'plain has the log')
        await plain.transact(() => atPlain.add('unsigned'), { message: 'no key' })
        await until(() => strict.stats().admission.badSignatures === 1, 'refused: nothing proves the author')
        assert.equal((await strict.history('log')).length, 1)
      },
    )
  } finally {
    await dir.remove()
  }
})

test('a signed Yjs update that waited at the hub for the one it depends on keeps its bytes and signature there: the hub relays both verifiable', async () => {
  const alice = await keyPair()
  await withPeers([{ agentId: 'A', signingKey: alice.key }, { agentId: 'hub' }, { agentId: 'B', authorKeys: { A: alice.peerId } }], async ([a, hub, b]) => {
    const notes = await a.yjs('notes')
    await a.transact(() => notes.doc.getText('t').insert(0, 'ship'), { message: 'first' })
    await a.transact(() => notes.doc.getText('t').insert(4, ' it'), { message: 'second' })
    await a.flush()
    const [first, second] = [1, 2].map(async (seq) => decodeRecord((await a.store.storage.get(logKey('notes', seq)))!, { name: 'notes', seq }))
    const records = [await first, await second]
    assert.ok(
      records.every((record) => record.signature),
      'A signed both',
    )
    const { url } = await hub.listen()
    await b.connect(url)
    await untilSynced(b, 'hub')
    const relay = await rawClient(url, true, { peer: 'relay', extensions: [provenanceExtension(), signaturesExtension()] })
    try {
      // The second first: it waits at the hub for the structs of the first, which then lets it in.
      for (const [i, record] of [records[1], records[0]].entries()) {
        await relay.send({
          type: 'provenance',
          seq: i + 1,
          agent: 'A',
          message: record.message,
          authored: record.authored ?? record.hlc,
          signatures: [record.signature],
        })
        await relay.send({ type: 'delta', seq: i + 1, entry: { name: 'notes', replicaType: 'yjs', delta: record.delta } })
      }
      const atB = await b.yjs('notes')
      await until(() => atB.doc.getText('t').toString() === 'ship it', 'B has both updates')
      await until(async () => (await b.history('notes')).length === 2, 'logged on B')
      assert.deepEqual(await signatures(b, 'notes'), [
        ['A', 'first', 'verified', alice.peerId],
        ['A', 'second', 'verified', alice.peerId],
      ])
      // On the hub: each logged as it came (the first, then the one it let in), signature and all.
      assert.deepEqual(await signatures(hub, 'notes'), [
        ['A', 'first', 'unbound', alice.peerId],
        ['A', 'second', 'unbound', alice.peerId],
      ])
      assert.deepEqual(
        (await hub.history('notes')).map((h) => Buffer.from(h.delta).toString('hex')),
        records.map((record) => Buffer.from(record.delta).toString('hex')),
      )
      assert.equal(b.stats().admission.badSignatures, 0)
      assert.deepEqual((await hub.store.verify('notes')).problems, [])
    } finally {
      relay.ws.close()
    }
  })
})
