/**
 * Anti-entropy answers made of records (issue 16; sync/PROTOCOL.md "Answers
 * made of records"): real peers (LevelDB folders, WebSocket on 127.0.0.1).
 * Changes an agent made while disconnected reach the hub by resync, not
 * live, and keep their author, message, meta and signature there and on a
 * peer behind the hub; a peer without the `answer-records` extension still
 * converges both ways (merged state, as before); a relay whose answer
 * carries a record it tampered with is refused and nothing of it applies.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { encodeRecord, decodeRecord } from '../../persistence/format/record.ts'
import { logKey } from '../../persistence/format/keys.ts'
import type { Peer } from '../../peer/index.ts'
import type { AutomergeReplica } from '../../crdt/documents/automerge-replica.ts'
import type { PNCounterReplica } from '../../crdt/types/pncounter.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { openStore } from '../../persistence/index.ts'
import { tempDir } from '../persistence/helpers.ts'
import { until, untilSynced } from '../helpers/wait.ts'
import { connectThroughHub, keyPair, withPeers } from './helpers.ts'

const untilGone = (peer: Peer, remote: string) => until(() => !peer.status().sessions.some((s) => s.agentId === remote), `${peer.agentId} lost ${remote}`)

/** A hub, A signing with `alice`'s key, and B behind the hub; the hub and B know A's key. */
const signedTrio = (alice: Awaited<ReturnType<typeof keyPair>>) => [
  { agentId: 'hub', authorKeys: { A: alice.peerId } },
  { agentId: 'A', signingKey: alice.key },
  { agentId: 'B', authorKeys: { A: alice.peerId } },
]

const provenance = async (peer: Peer, name: string) =>
  (await peer.history(name)).map((h) => [h.agent, h.message ?? null, h.meta ?? null, h.signature?.status ?? 'unsigned'])

test('changes an agent made while disconnected reach the hub by resync with their author, message and signature, and a peer behind it too', async () => {
  const alice = await keyPair()
  await withPeers(signedTrio(alice), async ([hub, a, b]) => {
    const url = await connectThroughHub(hub, a, b)
    const tasks = await a.counter('tasks')
    await a.transact(() => tasks.increment(1), { message: 'online' })
    const atB = await b.counter('tasks')
    await until(() => atB.value() === 1, 'the live change reaches B')

    a.disconnect(url)
    await untilGone(hub, 'A')
    // Offline: a counter the hub holds, a document it has never seen (made, then trimmed), one change made for another agent.
    await a.transact(() => tasks.increment(2), { message: 'two more', meta: { tool: 'planner' } })
    const notes = await a.yjs('notes')
    await a.transact(() => notes.doc.getText('t').insert(0, 'draft of the plan'), { message: 'draft' })
    await a.transact(() => notes.doc.getText('t').delete(0, 9), { message: 'trim' })
    await a.transact(() => tasks.increment(4), { agent: 'ana', message: 'for ana' })
    await a.flush()
    assert.equal(atB.value(), 1, 'nothing travelled while A was away')

    await a.connect(url)
    const notesAtB = await b.yjs('notes')
    await until(() => atB.value() === 7 && notesAtB.doc.getText('t').toString() === 'the plan', 'the resync reaches B through the hub')
    const expectedTasks = [
      ['A', 'online', null, 'verified'],
      ['A', 'two more', { tool: 'planner' }, 'verified'],
      // A holds no key of ana's: a change it made for her is unsigned.
      ['ana', 'for ana', null, 'unsigned'],
    ]
    const expectedNotes = [
      ['A', 'draft', null, 'verified'],
      ['A', 'trim', null, 'verified'],
    ]
    for (const peer of [hub, b]) {
      await until(
        async () => (await peer.history('tasks')).length === 3 && (await peer.history('notes').catch(() => [])).length === 2,
        `logged on ${peer.agentId}`,
      )
      assert.deepEqual(await provenance(peer, 'tasks'), expectedTasks, `tasks on ${peer.agentId}`)
      assert.deepEqual(await provenance(peer, 'notes'), expectedNotes, `notes on ${peer.agentId}`)
      const report = await peer.store.verify('tasks')
      assert.deepEqual(report.problems, [])
      assert.deepEqual(report.signatures, { verified: 2, unbound: 0, unsigned: 1 })
    }
    // The author's time travels too.
    const made = (await a.history('tasks')).map((h) => h.hlc)
    assert.deepEqual(
      (await hub.history('tasks')).slice(1).map((h) => h.authored),
      made.slice(1),
    )
    assert.ok(a.stats().totals.answerRecords >= 4, 'A answered with records')
    assert.equal(hub.stats().admission.badSignatures + b.stats().admission.badSignatures, 0)
  })
})

test('a peer without answer records still converges both ways: its answers, and those it is sent, are merged state', () =>
  withPeers([{ agentId: 'hub' }, { agentId: 'old', sync: { answerRecords: false } }], async ([hub, old]) => {
    const { url } = await hub.listen()
    await old.connect(url)
    await untilSynced(hub, 'old')
    await untilSynced(old, 'hub')
    const atOld = await old.set('seen')
    const atHub = await hub.set('seen')
    await old.transact(() => atOld.add('first'), { message: 'live' })
    await until(() => (atHub.value() as string[]).includes('first'), 'the live change reaches the hub')
    old.disconnect(url)
    await untilGone(hub, 'old')
    await old.transact(() => atOld.add('from old'), { message: 'made offline at old' })
    await hub.transact(() => atHub.add('from hub'), { message: 'made at the hub meanwhile' })
    await old.connect(url)
    const all = '["first","from hub","from old"]'
    await until(
      () => JSON.stringify([...(atOld.value() as string[])].sort()) === all && JSON.stringify([...(atHub.value() as string[])].sort()) === all,
      'both converge',
    )
    await until(async () => (await hub.history('seen')).length === 3 && (await old.history('seen')).length === 3, 'logged on both')
    // Merged state both ways: logged under the peer that sent it, without its message.
    assert.deepEqual(
      (await hub.history('seen')).map((h) => [h.agent, h.message ?? null]),
      [
        ['old', 'live'],
        ['hub', 'made at the hub meanwhile'],
        ['old', null],
      ],
    )
    assert.deepEqual(
      (await old.history('seen')).map((h) => [h.agent, h.message ?? null]),
      [
        ['old', 'live'],
        ['old', 'made offline at old'],
        ['hub', null],
      ],
    )
    assert.equal(hub.stats().totals.answerRecords + old.stats().totals.answerRecords, 0)
    assert.equal(hub.stats().totals.unexpected ?? 0, 0)
    assert.equal(old.stats().totals.unexpected ?? 0, 0)
  }))

test('a relay whose answer carries a record it tampered with is refused and nothing of it applies; the content then comes as the relay’s own merged state', async () => {
  const alice = await keyPair()
  await withPeers([{ agentId: 'relay' }, { agentId: 'A', signingKey: alice.key }, { agentId: 'B', authorKeys: { A: alice.peerId } }], async ([relay, a, b]) => {
    const { url } = await relay.listen()
    await a.connect(url)
    await untilSynced(a, 'relay')
    const board = await a.set('board')
    await a.transact(() => board.add('ship it'), { message: 'approved' })
    await until(async () => (await relay.history('board').catch(() => [])).length === 1, 'the relay logged it')
    a.disconnect(url)
    await untilGone(relay, 'A')
    // The relay rewrites the message of the record it holds (checksum and all: only the signature tells).
    const key = logKey('board', 1)
    const record = decodeRecord((await relay.store.storage.get(key))!, { name: 'board', seq: 1 })
    assert.ok(record.signature, 'the relay keeps A’s signature')
    await relay.store.storage.batch([{ type: 'put', key, value: encodeRecord({ ...record, message: 'rejected' }) }], { sync: true })
    assert.equal((await relay.history('board'))[0].message, 'rejected')

    await b.connect(url)
    await until(() => b.stats().admission.badSignatures === 1, 'B refuses the tampered record')
    assert.ok(relay.stats().totals.answerRecords >= 1, 'it came in an answer')
    // Refused as A's, the relay sends what it holds as its own: B converges, and nothing on B is A's or says "rejected".
    const atB = await b.set('board')
    await until(() => JSON.stringify(atB.value()) === '["ship it"]', 'B converges')
    await until(async () => (await b.history('board')).length === 1, 'logged on B')
    assert.deepEqual(await provenance(b, 'board'), [['relay', null, null, 'unsigned']])
    assert.equal(b.stats().admission.badSignatures, 1, 'refused once: later answers give the name as merged state')
  })
})

test('records whose author’s key the receiver knows but which are unsigned (made before the author had a key) come as merged state: the receiver converges', async () => {
  const alice = await keyPair()
  await withPeers([{ agentId: 'hub' }, { agentId: 'A' }, { agentId: 'B', authorKeys: { A: alice.peerId } }], async ([hub, a, b]) => {
    const { url } = await hub.listen()
    await a.connect(url)
    await untilSynced(a, 'hub')
    const notes = await a.yjs('notes')
    await a.transact(() => notes.doc.getText('t').insert(0, 'unsigned words'), { message: 'before keys' })
    await until(async () => (await hub.history('notes').catch(() => [])).length === 1, 'the hub logged it')
    await b.connect(url)
    const atB = await b.yjs('notes')
    await until(() => atB.doc.getText('t').toString() === 'unsigned words', 'B converges')
    assert.equal(b.stats().admission.badSignatures, 1, 'the unsigned claim of A is refused once')
    await until(async () => (await b.history('notes')).length === 1, 'logged on B')
    assert.deepEqual(await provenance(b, 'notes'), [['hub', null, null, 'unsigned']])
  })
})

test('a transaction of several names made before connecting travels in the answer as one commit, with its provenance, through a relay', () =>
  withPeers([{ agentId: 'relay' }, { agentId: 'A' }, { agentId: 'C' }], async ([relay, a, c]) => {
    const { url } = await relay.listen()
    await c.connect(url)
    await untilSynced(c, 'relay')
    const counter = await a.counter('count')
    const log = await a.set<string>('log')
    await a.transact(
      () => {
        counter.increment()
        log.add('one')
        counter.increment(2)
        log.add('two')
      },
      { message: 'both names', meta: { step: 1 } },
    )
    await a.flush()
    await a.connect(url)
    const far = await c.counter('count')
    const farLog = await c.set<string>('log')
    await until(() => far.value() === 3 && farLog.size === 2, 'the transaction reaches C through the relay')
    await until(async () => (await c.history('count')).length === 2 && (await c.history('log')).length === 2, 'logged on C')
    for (const peer of [relay, c]) {
      assert.deepEqual(
        [...(await provenance(peer, 'count')), ...(await provenance(peer, 'log'))].map(([agent, message, meta]) => [agent, message, meta]),
        Array(4).fill(['A', 'both names', { step: 1 }]),
        `on ${peer.agentId}`,
      )
    }
    // One commit per hop: A's answer to the relay, and the relay's to C (live or in an answer).
    assert.equal(a.stats().totals.commitsOut, 1)
    assert.equal(a.stats().totals.answerRecords, 1)
    assert.equal(c.stats().totals.commitsIn, 1)
  }))

test('Automerge documents changed and created while disconnected reach the hub by resync with their author, message and signature', async () => {
  const alice = await keyPair()
  type Plan = { steps: string[]; owner?: string }
  await withPeers(signedTrio(alice), async ([hub, a, b]) => {
    const url = await connectThroughHub(hub, a, b)
    const plan = (await a.open('plan', 'automerge')) as unknown as AutomergeReplica<Plan>
    await a.transact(() => plan.change((doc) => void (doc.steps = ['gather'])), { message: 'start' })
    const planAtB = (await b.open('plan', 'automerge')) as unknown as AutomergeReplica<Plan>
    await until(() => planAtB.doc.steps?.length === 1, 'the live change reaches B')

    a.disconnect(url)
    await untilGone(hub, 'A')
    // Offline: a change to a document the hub holds, and a document it has never seen.
    await a.transact(() => plan.change((doc) => void doc.steps.push('decide')), { message: 'decided', meta: { tool: 'planner' } })
    const fresh = (await a.open('fresh', 'automerge')) as unknown as AutomergeReplica<Plan>
    await a.transact(() => fresh.change((doc) => void (doc.owner = 'A')), { message: 'created offline' })
    await a.flush()

    await a.connect(url)
    await until(() => planAtB.doc.steps?.length === 2, 'the resync reaches B through the hub')
    for (const peer of [hub, b]) {
      await until(
        async () => (await peer.history('plan')).length === 2 && (await peer.history('fresh').catch(() => [])).length >= 1,
        `logged on ${peer.agentId}`,
      )
      assert.deepEqual(
        await provenance(peer, 'plan'),
        [
          ['A', 'start', null, 'verified'],
          ['A', 'decided', { tool: 'planner' }, 'verified'],
        ],
        `plan on ${peer.agentId}`,
      )
      assert.deepEqual((await provenance(peer, 'fresh')).at(-1), ['A', 'created offline', null, 'verified'], `fresh on ${peer.agentId}`)
      assert.deepEqual((await peer.store.verify('plan')).problems, [])
    }
    assert.equal(hub.stats().admission.badSignatures + b.stats().admission.badSignatures, 0)
  })
})

test('a remote that holds nothing of a name is answered with every record, oldest first, without reading what it lacks; a trimmed log falls back to the exact run', async () => {
  const { dir, remove } = await tempDir()
  try {
    const store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    const tasks = (await store.open('tasks', 'pncounter')) as PNCounterReplica
    for (const n of [1, 2, 3]) await store.atomic(() => tasks.increment(n), { message: `+${n}` })
    const notes = (await store.open('notes', 'yjs')) as YjsReplica
    await store.atomic(() => notes.doc.getText('t').insert(0, 'draft of the plan'))
    await store.atomic(() => notes.doc.getText('t').delete(0, 9))
    const plan = (await store.open('plan', 'automerge')) as unknown as AutomergeReplica<{ steps: string[] }>
    await store.atomic(() => plan.change((doc) => void (doc.steps = ['gather'])))
    await store.atomic(() => plan.change((doc) => void doc.steps.push('decide')))
    await store.flush()
    const limits = { maxBytes: 1 << 20, maxRecords: 100 }
    // What the remote lacks is not read: bytes that decode as nothing stand for it.
    const unread = new Uint8Array([0xff, 0xff, 0xff])
    for (const [name, type, count] of [
      ['tasks', 'pncounter', 3],
      ['notes', 'yjs', 2],
      ['plan', 'automerge', 2],
    ] as const) {
      const run = await store.recordsSince(name, store.emptyVersion(type), unread, limits)
      assert.ok(run, `${name}: a run of records`)
      assert.deepEqual(
        run.records.map((record) => record.seq),
        Array.from({ length: count }, (_, i) => i + 1),
        name,
      )
      assert.equal(run.residual, undefined, name)
    }
    const counted = await store.recordsSince('tasks', store.emptyVersion('pncounter'), unread, limits)
    assert.deepEqual(
      counted?.records.map((record) => record.message),
      ['+1', '+2', '+3'],
    )
    // Bounds still hold.
    assert.equal(await store.recordsSince('tasks', store.emptyVersion('pncounter'), unread, { maxBytes: 1 << 20, maxRecords: 2 }), undefined)
    await store.close()

    // The first records trimmed (checkpoints, one kept): the exact run is asked, and finds they are gone.
    const trimmed = await openStore({ dir, agentId: 'a', sweepMs: 0, retention: { checkpoints: 1 } })
    const again = (await trimmed.open('tasks', 'pncounter')) as PNCounterReplica
    await trimmed.checkpoint('tasks')
    await trimmed.atomic(() => again.increment(10))
    await trimmed.checkpoint('tasks')
    await trimmed.atomic(() => again.increment(20))
    await trimmed.flush()
    const lack = again.deltaSince(trimmed.emptyVersion('pncounter'))
    assert.ok(lack)
    assert.equal(await trimmed.recordsSince('tasks', trimmed.emptyVersion('pncounter'), lack, limits), undefined)
    await trimmed.close()
  } finally {
    await remove()
  }
})
