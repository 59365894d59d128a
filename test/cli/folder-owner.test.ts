/**
 * Who owns a folder: `concord import` (a maintenance command) creates a
 * folder no replica has claimed, and the first peer that opens it owns it;
 * `--id` claims it on purpose; a folder owned by another replica is refused
 * with a message that says how to proceed.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { writeFile } from 'node:fs/promises'
import { createPeer } from '../../peer/index.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { cli, cliJson, makeFixture } from './helpers.ts'

async function withExport(fn: (root: string, dumpFile: string) => Promise<void>): Promise<void> {
  const root = await tempDir('concord-cli-owner-')
  try {
    const source = join(root.path, 'alice')
    await makeFixture(source)
    const dump = await cli(['export', '--dir', source])
    assert.equal(dump.code, 0)
    const dumpFile = join(root.path, 'dump.jsonl')
    await writeFile(dumpFile, dump.stdout)
    await fn(root.path, dumpFile)
  } finally {
    await root.remove()
  }
}

test('a folder made by concord import is not claimed: the first agent that opens it with its own id owns it', () =>
  withExport(async (root, dumpFile) => {
    const dir = join(root, 'imported')
    const imported = await cliJson(['import', '--dir', dir, dumpFile])
    assert.equal(imported.code, 0, imported.stderr)
    const before = await cliJson(['inspect', '--dir', dir])
    assert.equal(before.json.agentId, null, 'no owner yet')
    assert.match((await cli(['inspect', '--dir', dir])).stdout, /unclaimed: the first peer that opens this folder owns it/)
    // Maintenance commands keep it unclaimed, even those that write (a revert writes under an id of the run).
    assert.equal((await cli(['compact', '--dir', dir])).code, 0)
    const revert = await cliJson(['revert', '--dir', dir, 'tasks', '0'])
    assert.equal(revert.code, 0, revert.stderr)
    assert.equal(revert.json.value, 0)
    const agent = (await cliJson(['history', '--dir', dir, 'tasks'])).json.at(-1).agent as string
    assert.match(agent, /^concord-cli-[0-9a-f]{12}$/)
    assert.equal((await cliJson(['inspect', '--dir', dir])).json.agentId, null)

    const peer = await createPeer({ agentId: 'agent', dir })
    try {
      assert.deepEqual((await peer.register('plan')).value(), { step: 3 })
      const tasks = await peer.counter('tasks')
      assert.equal(tasks.value(), 0)
      tasks.increment()
    } finally {
      await peer.close()
    }
    assert.equal((await cliJson(['inspect', '--dir', dir])).json.agentId, 'agent', 'the agent claimed it')
    // From now on it is the agent's: another id is refused, saying how to proceed.
    const error = await createPeer({ agentId: 'intruder', dir }).then(
      async (p) => {
        await p.close()
        return undefined
      },
      (e: unknown) => e,
    )
    assert.ok(isConcordError(error, ErrorCodes.INVALID_ARGUMENT))
    assert.match(
      (error as Error).message,
      /belongs to agent "agent", not "intruder".*Open it with agentId "agent", or give "intruder" a folder of its own.*concord export --dir THIS \| concord import --dir NEW/,
    )
  }))

test('import --id claims the new folder for that replica; a serve on an unclaimed folder claims it as its own id', () =>
  withExport(async (root, dumpFile) => {
    const claimed = join(root, 'claimed')
    assert.equal((await cli(['import', '--dir', claimed, dumpFile, '--id', 'bob'])).code, 0)
    assert.equal((await cliJson(['inspect', '--dir', claimed])).json.agentId, 'bob')
    await assert.rejects(createPeer({ agentId: 'agent', dir: claimed }), /belongs to agent "bob", not "agent"/)
    const bob = await createPeer({ agentId: 'bob', dir: claimed })
    assert.equal((await bob.counter('tasks')).value(), 5)
    await bob.close()
    // Importing again into it with another --id is a usage error naming the owner.
    const wrong = await cli(['import', '--dir', claimed, dumpFile, '--id', 'carol'])
    assert.equal(wrong.code, 2)
    assert.match(wrong.stderr, /belongs to agent "bob", not "carol"/)

    const unclaimed = join(root, 'relay')
    assert.equal((await cli(['import', '--dir', unclaimed, dumpFile])).code, 0)
    const stop = new AbortController()
    let listening!: () => void
    const ready = new Promise<void>((resolve) => {
      listening = resolve
    })
    const served = cli(['serve', '--dir', unclaimed, '--port', '0', '--id', 'relay'], { signal: stop.signal, onListening: () => listening() })
    await ready
    stop.abort()
    assert.equal((await served).code, 0)
    assert.equal((await cliJson(['inspect', '--dir', unclaimed])).json.agentId, 'relay')
  }))
