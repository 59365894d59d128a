import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TypeMismatchError, withArticle } from '../../crdt/errors.ts'
import { createPeer } from '../../peer/index.ts'

test('messages use the right article: "an orset", "a pncounter", "an lww-register", "a Uint8Array"', async () => {
  assert.deepEqual(
    [
      'orset',
      'ormap',
      'ewflag',
      'automerge',
      'lww-register',
      'mv-register',
      'pncounter',
      'gcounter',
      'gset',
      'yjs',
      'Uint8Array',
      'array',
      'undefined',
      'Map',
    ].map(withArticle),
    [
      'an orset',
      'an ormap',
      'an ewflag',
      'an automerge',
      'an lww-register',
      'an mv-register',
      'a pncounter',
      'a gcounter',
      'a gset',
      'a yjs',
      'a Uint8Array',
      'an array',
      'an undefined',
      'a Map',
    ],
  )
  assert.equal(new TypeMismatchError('tasks', 'pncounter', 'orset').message, '"tasks" is an orset, not a pncounter')
  const peer = await createPeer({ agentId: 'p' })
  try {
    await peer.set('seen')
    await assert.rejects(peer.counter('seen'), { message: '"seen" is an orset, not a pncounter' })
    await peer.register('plan')
    await assert.rejects(peer.map('plan'), { message: '"plan" is an lww-register, not an ormap' })
  } finally {
    await peer.close()
  }
})
