/**
 * One name for the agent identity: `PeerOptions.agentId` is the option and
 * `peer.agentId` the property; `PeerOptions.id` and `peer.id` stay accepted
 * for one release as deprecated aliases of the same id (both given and
 * different: CONCORD_INVALID_ARGUMENT). The id is the one the store is
 * claimed for, the author of the records and the id the remote sees in the
 * handshake, whichever name gave it. crdt/ and sync/ share one brand.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { agentId as crdtAgentId } from '../../crdt/index.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { agentId as syncAgentId } from '../../sync/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

const invalidArgument = (pattern: RegExp) => (error: unknown) =>
  error instanceof ConcordError && error.code === ErrorCodes.INVALID_ARGUMENT && pattern.test(error.message)

test('agentId names the peer: the store owner, the author of its records, the id its remote sees', async () => {
  const dir = await tempDir('concord-agent-id-')
  const peers: Peer[] = []
  try {
    const hub = await createPeer({ agentId: 'hub', dir: join(dir.path, 'hub') })
    peers.push(hub)
    assert.equal(hub.agentId, 'hub')
    assert.equal(hub.status().agentId, 'hub')
    const ana = await createPeer({ agentId: 'ana' })
    peers.push(ana)
    const seenByHub: string[] = []
    hub.on('peer-connected', ({ agentId }) => seenByHub.push(agentId))
    const { url } = await hub.listen({ port: 0, host: '127.0.0.1' })
    await ana.connect(url)
    ;(await ana.counter('visits')).increment(2)
    await ana.flush({ acks: 1 })
    await until(async () => (await hub.counter('visits')).value() === 2, 'the hub has the change')
    assert.deepEqual(seenByHub, ['ana'])
    assert.deepEqual(
      hub.status().sessions.map((s) => s.agentId),
      ['ana'],
    )
    assert.deepEqual(
      (await hub.history('visits')).map((h) => h.agent),
      ['ana'],
      'the record is authored by the agent id',
    )
  } finally {
    for (const peer of peers.reverse()) await peer.close()
    await dir.remove()
  }
})

test('the deprecated PeerOptions.id and peer.id are the agent id (an old folder opens with agentId)', async () => {
  const dir = await tempDir('concord-agent-id-')
  try {
    const path = join(dir.path, 'old')
    // The deprecated option, as a caller of the last release writes it (it still type-checks).
    const old = await createPeer({ id: 'old', dir: path })
    assert.equal(old.agentId, 'old')
    assert.equal(old.id, 'old', 'the deprecated getter')
    ;(await old.counter('c')).increment(1)
    await old.close()

    const same = await createPeer({ agentId: 'old', id: 'old', dir: path })
    assert.equal(same.agentId, 'old', 'both given and equal: accepted')
    assert.equal((await same.counter('c')).value(), 1, 'the folder claimed through id opens with agentId')
    assert.deepEqual(
      (await same.history('c')).map((h) => h.agent),
      ['old'],
    )
    await same.close()

    await assert.rejects(createPeer({ agentId: 'other', dir: path }), invalidArgument(/belongs to agent "old", not "other"/))
  } finally {
    await dir.remove()
  }
})

test('createPeer refuses agentId and id that differ, and a missing or bad agent id (CONCORD_INVALID_ARGUMENT)', async () => {
  await assert.rejects(createPeer({ agentId: 'a', id: 'b' }), invalidArgument(/agentId "a" and id "b" differ/))
  await assert.rejects(createPeer({} as PeerOptions), invalidArgument(/needs an agentId/))
  await assert.rejects(createPeer({ agentId: '' }), invalidArgument(/agentId must be a non-empty string/))
  await assert.rejects(createPeer({ id: 'x'.repeat(257) }), invalidArgument(/agentId must be a non-empty string of at most 256/))
  await assert.rejects(createPeer({ agentId: 7 as unknown as string }), invalidArgument(/agentId must be a non-empty string/))
})

test('crdt/ and sync/ share one agent id brand and its check', () => {
  assert.equal(syncAgentId, crdtAgentId, 'sync re-exports the one constructor of crdt/')
  assert.equal(crdtAgentId('ana'), 'ana')
  assert.throws(() => crdtAgentId(''), /agent id must be a non-empty string of at most 256 characters/)
  assert.throws(() => syncAgentId('x'.repeat(257)), RangeError)
})
