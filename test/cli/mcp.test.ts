import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createPeer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { cli } from './helpers.ts'

test('concord mcp: usage errors say what to give (exit 2), nothing on stdout (it is the protocol); a client that hangs up at once ends it cleanly', async () => {
  const root = await tempDir('concord-cli-mcp-')
  try {
    const fresh = join(root.path, 'fresh')
    const noId = await cli(['mcp', '--dir', fresh], { input: '' })
    assert.equal(noId.code, 2)
    assert.match(noId.stderr, /a new folder needs --id <agent>/)
    assert.equal(noId.stdout, '')
    const badUrl = await cli(['mcp', '--dir', fresh, '--id', 'ana', '--connect', 'http://nowhere'], { input: '' })
    assert.equal(badUrl.code, 2)
    assert.match(badUrl.stderr, /--connect http:\/\/nowhere/)
    const owned = join(root.path, 'owned')
    await (await createPeer({ agentId: 'bo', dir: owned })).close()
    const other = await cli(['mcp', '--dir', owned, '--id', 'ana'], { input: '' })
    assert.equal(other.code, 2)
    assert.match(other.stderr, /belongs to agent "bo", not "ana"/)
    const run = await cli(['mcp', '--dir', owned], { input: '' })
    assert.equal(run.code, 0, run.stderr)
    assert.equal(run.stdout, '', 'stdout carries only MCP messages')
    assert.match(run.stderr, /agent "bo" on .*serving MCP on stdio/)
    assert.match(run.stderr, /the client closed stdin: flushing and closing/)
  } finally {
    await root.remove()
  }
})
