/**
 * Selective revert (issue 16): one agent's changes since a time are undone
 * as a new replicated change, where the type allows it: a Yjs text loses
 * exactly the characters the agent typed (wherever they moved), a counter
 * its contribution, a set the elements it added (and gets back those it
 * removed), a map the keys it set last; others' later changes stay; a
 * grow-only counter and Automerge are refused. Real LevelDB folder; the
 * revert reaches a second peer.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import { createPeer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

test('revert(name, { agent, since }) undoes that agent’s changes only, per type, as a replicated change', async () => {
  const dir = await tempDir('concord-selective-')
  const peer = await createPeer({ agentId: 'hub', dir: join(dir.path, 'hub') })
  const other = await createPeer({ agentId: 'other', dir: join(dir.path, 'other') })
  try {
    await other.connect((await peer.listen()).url)
    const as = (agent: string, fn: () => void, message?: string) => peer.transact(fn, { agent, message })
    const doc = await peer.yjs('doc')
    const t = doc.doc.getText('t')
    await as('ana', () => t.insert(0, 'Hello world'))
    const since = Date.now()
    await new Promise((resolve) => setTimeout(resolve, 5))
    await as('mallory', () => t.insert(5, ' cruel'))
    await as('bo', () => t.insert(t.length, '!'))
    await as('mallory', () => t.insert(0, '>> '))
    await as('ana', () => t.insert(t.toString().indexOf('world'), 'big '))
    assert.equal(t.toString(), '>> Hello cruel big world!')

    const votes = await peer.counter('votes')
    await as('ana', () => votes.increment(2))
    await as('mallory', () => votes.increment(10))
    await as('bo', () => votes.increment(1))
    await as('mallory', () => votes.decrement(3))

    const tags = await peer.set('tags')
    await as('ana', () => tags.add('keep'))
    await as('ana', () => tags.add('old'))
    await as('mallory', () => tags.add('spam'))
    await as('mallory', () => tags.delete('old'))

    const facts = await peer.map('facts')
    await as('ana', () => facts.set('owner', 'ana'))
    await as('ana', () => facts.set('status', 'draft'))
    await as('mallory', () => facts.set('owner', 'mallory'))
    await as('mallory', () => facts.set('status', 'hacked'))
    await as('bo', () => facts.set('status', 'review'))
    await as('mallory', () => facts.set('evil', true))

    for (const name of ['doc', 'votes', 'tags', 'facts']) {
      const seq = await peer.revert(name, { agent: 'mallory', since }, { agent: 'ops', message: 'undo mallory' })
      assert.ok(seq !== null, name)
    }
    assert.equal(t.toString(), 'Hello big world!', 'only mallory’s characters are gone')
    assert.equal(votes.value(), 3, 'ana 2 + bo 1')
    assert.deepEqual([...(tags.value() as string[])].sort(), ['keep', 'old'])
    assert.deepEqual(facts.value(), { owner: 'ana', status: 'review' }, 'bo’s later status stays; mallory’s owner and key go')
    // The revert is a change of its own, by whoever made it, and it replicates.
    const [last] = await peer.history('doc', { reverse: true, limit: 1 })
    assert.deepEqual([last.agent, last.message], ['ops', 'undo mallory'])
    const remote = await other.yjs('doc')
    await until(() => remote.doc.getText('t').toString() === 'Hello big world!', 'the revert reaches the other peer')
    // Nothing left to undo; changes before `since` are not touched.
    assert.equal(await peer.revert('doc', { agent: 'mallory', since }), null)
    assert.equal(await peer.revert('doc', { agent: 'ana', since: Date.now() + 60_000 }), null)

    const grow = await peer.gcounter('grow')
    await as('mallory', () => grow.increment(4))
    await assert.rejects(peer.revert('grow', { agent: 'mallory' }), (error) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'))
    const spec = await peer.automerge<{ a?: number }>('spec')
    await as('mallory', () =>
      spec.change((d) => {
        d.a = 1
      }),
    )
    await assert.rejects(peer.revert('spec', { agent: 'mallory' }), (error) => isConcordError(error, 'CONCORD_INVALID_ARGUMENT'))
    assert.equal(grow.value(), 4)
  } finally {
    await other.close()
    await peer.close()
    await dir.remove()
  }
})
