/**
 * PeerOptions are what a user sets; the test hooks (replica creator, clock,
 * session ticks) belong to concord-crdt/testing's createTestPeer: createPeer
 * refuses them with a typed error, createTestPeer honours them.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createReplica } from '../../crdt/registry.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { createPeer, type PeerOptions } from '../../peer/index.ts'
import { createTestPeer } from '../../testing/index.ts'

describe('test hooks', () => {
  for (const [hook, value] of [
    ['createReplica', createReplica],
    ['tickMs', 0],
    ['now', () => 0],
  ] as const) {
    it(`createPeer refuses ${hook} (CONCORD_INVALID_ARGUMENT, naming createTestPeer)`, async () => {
      const options = { agentId: 'user', [hook]: value } as unknown as PeerOptions
      await assert.rejects(
        createPeer(options),
        (error: unknown) => error instanceof ConcordError && error.code === ErrorCodes.INVALID_ARGUMENT && /createTestPeer/.test(error.message),
      )
    })
  }

  it('createTestPeer honours them: its replica creator makes the replicas it opens', async () => {
    const created: Array<{ type: ReplicaType; replica: unknown }> = []
    const peer = await createTestPeer({
      agentId: 'test',
      tickMs: 0,
      now: () => 1_000,
      createReplica: (type, options) => {
        const replica = createReplica(type, options)
        created.push({ type, replica })
        return replica
      },
    })
    try {
      const counter = await peer.counter('n')
      counter.increment(2)
      assert.equal(counter.value(), 2)
      // The opened replica is one it made (the store may make a scratch one of the type too: the empty state's digest).
      assert.ok(created.some(({ replica }) => replica === counter))
      assert.deepEqual([...new Set(created.map(({ type }) => type))], ['pncounter'])
    } finally {
      await peer.close()
    }
  })
})
