/**
 * The CLI's habits: usage errors honour --json and name the option actually
 * given, the lock error names the process holding the folder, expire asks
 * before deleting, verify points at repair, inspect shows damage, and a
 * large --json document is not cut when piped.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { once } from 'node:events'
import { ClassicLevel } from 'classic-level'
import { createPeer } from '../../peer/index.ts'
import { encodeKey } from '../../persistence/storage/level/key-codec.ts'
import { logPrefix } from '../../persistence/format/keys.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { cli, cliJson, makeFixture, runConcord, spawnConcord } from './helpers.ts'

async function withFixture(fn: (dir: string, root: string) => Promise<void>): Promise<void> {
  const root = await tempDir('concord-cli-habits-')
  try {
    const dir = join(root.path, 'alice')
    await makeFixture(dir)
    await fn(dir, root.path)
  } finally {
    await root.remove()
  }
}

/** Flips a byte in the middle of the first log record of `name` (intact records follow it). */
async function damageFirstRecord(dir: string, name: string): Promise<void> {
  const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' })
  const prefix = encodeKey(logPrefix(name))
  try {
    for await (const [key, value] of db.iterator({ gt: prefix, lt: Uint8Array.from([...prefix, 0xff]), limit: 1 })) {
      const copy = value.slice()
      copy[Math.floor(copy.length / 2)] ^= 0xff
      await db.put(key, copy)
      return
    }
    throw new Error(`no record of ${name}`)
  } finally {
    await db.close()
  }
}

test('usage errors: a mistyped option is reported as unknown with a suggestion, and --json gets a JSON error', async () => {
  const typo = await cli(['inspect', '--dri', '/tmp/x'])
  assert.equal(typo.code, 2)
  assert.match(typo.stderr, /unknown option '--dri'/)
  assert.match(typo.stderr, /Did you mean --dir\?/)
  assert.doesNotMatch(typo.stderr, /required option/, 'not reported as a missing --dir')

  const typoJson = await cli(['inspect', '--dri', '/tmp/x', '--json'])
  assert.equal(typoJson.code, 2)
  const parsed = JSON.parse(typoJson.stdout)
  assert.deepEqual(parsed.ok, false)
  assert.equal(parsed.error.code, 'CONCORD_INVALID_ARGUMENT')
  assert.equal(parsed.error.exit, 2)
  assert.match(parsed.error.message, /unknown option '--dri' \(Did you mean --dir\?\)/)

  for (const argv of [
    ['inspect', '--json'],
    ['inspct', '--dir', '/tmp/x', '--json'],
    ['export', '--dir', '/tmp/x', '--format', 'xml', '--json'],
    ['at', '--dir', '/tmp/x', 'plan', '--json'],
  ]) {
    const run = await cli(argv)
    assert.equal(run.code, 2, argv.join(' '))
    const json = JSON.parse(run.stdout)
    assert.equal(json.ok, false, argv.join(' '))
    assert.equal(json.error.code, 'CONCORD_INVALID_ARGUMENT', argv.join(' '))
  }
  const missing = await cli(['inspect'])
  assert.equal(missing.code, 2)
  assert.match(missing.stderr, /required option '-d, --dir <dir>' not specified \(or set \$CONCORD_DIR\)/)
  // A --json after `--` is an argument, not the option.
  assert.equal((await cli(['inspect', '--dri', 'x', '--', '--json'])).stdout, '')
})

test('a folder held by a running concord serve: the lock error names its pid and command', async () => {
  const root = await tempDir('concord-cli-lock-')
  const dir = join(root.path, 'relay')
  const server = spawnConcord(['serve', '--dir', dir, '--port', '0', '--json'])
  const exited = once(server, 'exit')
  try {
    let stdout = ''
    server.stdout!.on('data', (chunk) => {
      stdout += chunk
    })
    await until(() => stdout.includes('\n'), 'serve prints its address', 20_000)
    const locked = await runConcord(['inspect', '--dir', dir])
    assert.equal(locked.code, 4, locked.stderr)
    assert.match(locked.stderr, new RegExp(`held by another process \\(pid ${server.pid}: .*serve --dir`))
    const asJson = await runConcord(['verify', '--dir', dir, '--json'])
    assert.equal(asJson.code, 4)
    assert.equal(JSON.parse(asJson.stdout).error.code, 'CONCORD_LOCKED')
    assert.match(JSON.parse(asJson.stdout).error.message, new RegExp(`pid ${server.pid}`))
  } finally {
    server.kill('SIGTERM')
    await exited
    await root.remove()
  }
  // Held by this very process (a peer open here): said so.
  const again = await tempDir('concord-cli-lock-')
  const peer = await createPeer({ agentId: 'here', dir: again.path })
  try {
    const run = await cli(['inspect', '--dir', again.path])
    assert.equal(run.code, 4)
    assert.match(run.stderr, new RegExp(`held by this process \\(pid ${process.pid}`))
  } finally {
    await peer.close()
    await again.remove()
  }
})

test('expire: --dry-run lists, deleting needs --yes when nobody can answer, and asks at a terminal', () =>
  withFixture(async (dir) => {
    await new Promise((resolve) => setTimeout(resolve, 5))
    const all = ['facts', 'notes', 'plan', 'seen', 'spec', 'tasks']
    const names = async () => (await cliJson(['inspect', '--dir', dir, '--no-check'])).json.names.map((n: { name: string }) => n.name).sort()

    const dry = await cliJson(['expire', '--dir', dir, '--ttl', '1', '--dry-run'])
    assert.equal(dry.code, 0)
    assert.deepEqual([dry.json.dryRun, dry.json.expired.sort()], [true, all])
    assert.match((await cli(['expire', '--dir', dir, '--ttl', '1', '-n'])).stdout, /6 name\(s\) would be deleted: facts, notes, plan, seen, spec, tasks/)
    assert.deepEqual(await names(), all, 'a dry run deletes nothing')

    const refused = await cli(['expire', '--dir', dir, '--ttl', '1'])
    assert.equal(refused.code, 2)
    assert.match(refused.stderr, /6 name\(s\) would be deleted with all their data \(facts, .*\): rerun with --yes to delete them, or --dry-run/)
    assert.deepEqual(await names(), all, 'nothing deleted without --yes')
    assert.equal((await cli(['expire', '--dir', dir, '--ttl', '1', '--json'], { interactive: true })).code, 2, '--json never prompts')

    const declined = await cli(['expire', '--dir', dir, '--ttl', '1'], { interactive: true, input: 'n\n' })
    assert.equal(declined.code, 1)
    assert.match(declined.stderr, /delete 6 name\(s\) and all their data \(.*\)\? \[y\/N\] /)
    assert.match(declined.stderr, /nothing deleted/)
    assert.deepEqual(await names(), all)
    const noAnswer = await cli(['expire', '--dir', dir, '--ttl', '1'], { interactive: true, input: '' })
    assert.equal(noAnswer.code, 1, 'end of input is a no')

    const accepted = await cli(['expire', '--dir', dir, '--ttl', '1'], { interactive: true, input: 'y\n' })
    assert.equal(accepted.code, 0, accepted.stderr)
    assert.match(accepted.stdout, /expired 6 name\(s\)/)
    assert.deepEqual(await names(), [])
    assert.equal((await cli(['expire', '--dir', dir, '--ttl', '1'])).code, 0, 'nothing due: nothing to confirm')
  }))

test('verify failing points at repair; inspect lists the damaged name as DAMAGED, not live', () =>
  withFixture(async (dir) => {
    await damageFirstRecord(dir, 'plan')
    const text = await cli(['verify', '--dir', dir])
    assert.equal(text.code, 5)
    assert.match(text.stdout, /plan: record 1: /)
    assert.match(text.stdout, new RegExp(`to fix: concord repair --dir ${dir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} plan \\(keeps every intact record`))
    const json = await cliJson(['verify', '--dir', dir])
    assert.equal(json.code, 5)
    assert.match(json.json.hint, /concord repair --dir .* plan/)

    const listed = await cliJson(['inspect', '--dir', dir])
    assert.equal(listed.code, 0)
    const byName = Object.fromEntries(listed.json.names.map((n: { name: string; state: string }) => [n.name, n]))
    assert.equal(byName.plan.state, 'damaged')
    assert.ok(byName.plan.problems.length > 0)
    assert.equal(byName.tasks.state, 'live')
    const table = await cli(['inspect', '--dir', dir])
    assert.match(table.stdout, /^plan\s.*DAMAGED$/m)
    assert.match(table.stdout, /^tasks\s.*live$/m)
    assert.match(table.stdout, /to fix: concord repair --dir .* plan/)
    assert.match((await cli(['inspect', '--dir', dir, '--no-check'])).stdout, /^plan\s.*unchecked$/m)

    assert.equal((await cli(['repair', '--dir', dir])).code, 0)
    assert.equal((await cliJson(['inspect', '--dir', dir])).json.names.find((n: { name: string }) => n.name === 'plan').state, 'live')
  }))

test('a --json document larger than a pipe buffer (64 KiB) reaches a reader through a real pipe whole', async () => {
  const root = await tempDir('concord-cli-big-')
  try {
    const dir = join(root.path, 'big')
    const peer = await createPeer({ agentId: 'big', dir })
    const items = Array.from({ length: 20_000 }, (_, i) => `item-${String(i).padStart(6, '0')}-${'x'.repeat(40)}`)
    try {
      const set = await peer.set<string>('items')
      await peer.transact(() => {
        for (const item of items) set.add(item)
      })
    } finally {
      await peer.close()
    }
    const run = await runConcord(['inspect', '--dir', dir, 'items', '--json'])
    assert.equal(run.code, 0, run.stderr)
    assert.ok(run.stdout.length > 1_000_000, `${run.stdout.length} characters`)
    const value = JSON.parse(run.stdout).value as string[]
    assert.equal(value.length, items.length)
    assert.deepEqual(value.slice().sort(), items)
  } finally {
    await root.remove()
  }
})

test('serve: a port in use is said plainly (CONCORD_ADDRESS_IN_USE); no credentials beyond loopback is warned about; --connect retries a peer not up yet', async () => {
  const root = await tempDir('concord-cli-serve-')
  const busy = await createPeer({ agentId: 'busy' })
  try {
    const { port } = await busy.listen()
    const taken = await runConcord(['serve', '--dir', join(root.path, 'a'), '--port', String(port)])
    assert.equal(taken.code, 1)
    assert.match(taken.stderr, new RegExp(`CONCORD_ADDRESS_IN_USE: port ${port} is in use on 127\\.0\\.0\\.1 \\(another concord serve\\?\\)`))
    const takenJson = await runConcord(['serve', '--dir', join(root.path, 'a'), '--port', String(port), '--json'])
    assert.equal(JSON.parse(takenJson.stdout).error.code, 'CONCORD_ADDRESS_IN_USE')

    assert.equal((await cli(['serve', '--dir', join(root.path, 'b'), '--connect', 'http://nope'])).code, 2)

    // Listening on every interface with no credentials: a warning on stderr. The peer to --connect to comes up later.
    const probe = await createPeer({ agentId: 'probe' })
    const { port: laterPort } = await probe.listen()
    await probe.close() // that port is free again: nothing listens there yet
    const server = spawnConcord([
      'serve',
      '--dir',
      join(root.path, 'c'),
      '--port',
      '0',
      '--host',
      '0.0.0.0',
      '--connect',
      `ws://127.0.0.1:${laterPort}/concord`,
    ])
    const exited = once(server, 'exit')
    let stderr = ''
    server.stderr!.on('data', (chunk) => {
      stderr += chunk
    })
    const later = await createPeer({ agentId: 'later' })
    try {
      await until(() => /retrying in/.test(stderr), 'serve reports the failed first attempt and retries', 20_000)
      assert.match(stderr, new RegExp(`connect ws://127\\.0\\.0\\.1:${laterPort}/concord: CONCORD_UNREACHABLE: .*connection refused`))
      await later.listen({ port: laterPort })
      await until(() => later.connectedPeers.length === 1, 'serve connected once the peer was up', 30_000)
      await until(() => stderr.includes(`connected to ws://127.0.0.1:${laterPort}/concord`), 'serve says so')
      assert.match(stderr, /warning: listening on 0\.0\.0\.0 \(WebSocket\) with no credentials/)
    } finally {
      server.kill('SIGTERM')
      await exited
    }
    await later.close()
    const guarded = new AbortController()
    const quiet = cli(['serve', '--dir', join(root.path, 'd'), '--port', '0', '--host', '0.0.0.0', '--token', 't'], {
      signal: guarded.signal,
      onListening: () => guarded.abort(),
    })
    assert.doesNotMatch((await quiet).stderr, /warning/)
  } finally {
    await busy.close()
    await root.remove()
  }
})
