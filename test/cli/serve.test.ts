import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { createPeer } from '../../peer/index.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { parseAcl } from '../../cli/acl.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import * as Y from 'yjs'
import { yClient } from '../peer/helpers/y-websocket-clients.ts'
import { cli, cliJson, runConcord, spawnConcord } from './helpers.ts'
import { selfSignedCertificate } from '../helpers/tls.ts'

test('the real `concord serve` process: prints its URL, holds the folder (others get exit 4), flushes everything on SIGTERM', async () => {
  const root = await tempDir('concord-serve-')
  const dir = join(root.path, 'relay')
  const server = spawnConcord(['serve', '--dir', dir, '--port', '0', '--json', '--id', 'relay'])
  let stderr = ''
  server.stderr!.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = once(server, 'exit')
  const client = await createPeer({ agentId: 'client' })
  try {
    let stdout = ''
    server.stdout!.on('data', (chunk) => {
      stdout += chunk
    })
    await until(() => stdout.includes('\n'), 'serve prints its address', 20_000)
    const info = JSON.parse(stdout.split('\n')[0])
    assert.match(info.url, /^ws:\/\/127\.0\.0\.1:\d+\/concord$/)
    assert.equal(info.agentId, 'relay')

    await client.connect(info.url)
    const counter = await client.counter('visits')
    counter.increment(41)
    const notes = await client.yjs('notes')
    notes.doc.getText('t').insert(0, 'kept across restarts')
    await client.flush({ acks: 1 })

    // The folder is held: a second process gets a clear message and exit 4.
    const locked = await runConcord(['inspect', '--dir', dir])
    assert.equal(locked.code, 4, locked.stderr)
    assert.match(locked.stderr, /held by another process/)
    assert.doesNotMatch(locked.stderr, /\n\s+at /, 'no stack trace')
    assert.equal((await cli(['verify', '--dir', dir])).code, 4, 'in-process too')

    server.kill('SIGTERM')
    const [code] = await exited
    assert.equal(code, 0, stderr)
    assert.match(stderr, /SIGTERM: flushing and closing/)
    assert.match(stderr, /stopped, everything flushed/)

    const after = await cliJson(['inspect', '--dir', dir, 'visits'])
    assert.equal(after.json.value, 41)
    assert.deepEqual((await cliJson(['inspect', '--dir', dir, 'notes'])).json.value, { t: 'kept across restarts' })
    assert.equal((await cli(['verify', '--dir', dir])).code, 0)
  } finally {
    if (server.exitCode === null) server.kill('SIGKILL')
    await client.close()
    await root.remove()
  }
})

test('the real `concord serve --token T` process: a y-websocket client without the token is refused at the upgrade; with it, its edit is persisted under its own agent id', async () => {
  const root = await tempDir('concord-serve-yws-')
  const dir = join(root.path, 'relay')
  const server = spawnConcord(['serve', '--dir', dir, '--port', '0', '--json', '--id', 'relay', '--token', 'T'])
  let stderr = ''
  server.stderr!.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = once(server, 'exit')
  const docs = [new Y.Doc(), new Y.Doc(), new Y.Doc()]
  const clients: Array<ReturnType<typeof yClient>> = []
  try {
    let stdout = ''
    server.stdout!.on('data', (chunk) => {
      stdout += chunk
    })
    await until(() => stdout.includes('\n'), 'serve prints its address', 20_000)
    const base = JSON.parse(stdout.split('\n')[0]).yWebsocket.replace(/\/<room>$/, '')
    const anonymous = yClient(base, 'notes', docs[0])
    clients.push(anonymous)
    docs[0].getText('t').insert(0, 'anonymous')
    await until(() => anonymous.log.errors.some((message) => message.includes('401')), 'refused with 401')
    const member = yClient(base, 'notes', docs[1], { params: { token: 'T' } })
    const watcher = yClient(base, 'notes', docs[2], { headers: { Authorization: 'Bearer T' } })
    clients.push(member, watcher)
    await until(() => member.provider.synced && watcher.provider.synced, 'the clients with the token sync')
    docs[1].getText('t').insert(0, 'from the browser')
    // the server sends on only what is durable: once the watcher has it, it is logged
    await until(() => docs[2].getText('t').toString() === 'from the browser', 'the edit reaches the other client')
    assert.equal(docs[0].getText('t').toString(), 'anonymous', 'the refused client read nothing')
    server.kill('SIGTERM')
    const [code] = await exited
    assert.equal(code, 0, stderr)
    const history = await cliJson(['history', '--dir', dir, 'notes'])
    const agents = (history.json as Array<{ agent: string }>).map((record) => record.agent)
    assert.ok(agents.length >= 1 && agents.every((agent) => /^yws-[0-9a-f]{12}$/.test(agent)), `agents: ${agents}`)
    assert.deepEqual((await cliJson(['inspect', '--dir', dir, 'notes'])).json.value, { t: 'from the browser' }, 'nothing of the refused client')
  } finally {
    for (const c of clients) c.provider.destroy()
    for (const doc of docs) doc.destroy()
    if (server.exitCode === null) server.kill('SIGKILL')
    await root.remove()
  }
})

test('serve --acl: per-peer tokens and per-name access; serve stops on its signal and flushes', async () => {
  const root = await tempDir('concord-acl-')
  const dir = join(root.path, 'relay')
  const aclFile = join(root.path, 'acl.json')
  await writeFile(
    aclFile,
    JSON.stringify({
      tokens: { writer: 'w-secret', reader: 'r-secret' },
      default: 'read',
      rules: [
        { peer: 'writer', name: '*', access: 'write' },
        { peer: '*', name: 'private/*', access: 'none' },
      ],
    }),
  )
  const controller = new AbortController()
  let url = ''
  const serving = cli(['serve', '--dir', dir, '--port', '0', '--acl', aclFile], {
    signal: controller.signal,
    onListening: (info) => {
      url = info.url
    },
  })
  const peers = []
  try {
    await until(() => url !== '', 'serve listens')
    const intruder = await createPeer({ agentId: 'writer', auth: { token: 'nope' } })
    peers.push(intruder)
    await assert.rejects(intruder.connect(url), (e) => isConcordError(e, ErrorCodes.AUTH_FAILED))
    const writer = await createPeer({ agentId: 'writer', auth: { token: 'w-secret' } })
    peers.push(writer)
    await writer.connect(url)
    const shared = await writer.counter('shared')
    shared.increment(2)
    const secret = await writer.register<string>('private/key')
    secret.set('k')
    await writer.flush({ acks: 1 })
    const reader = await createPeer({ agentId: 'reader', auth: { token: 'r-secret' } })
    peers.push(reader)
    await reader.connect(url)
    await until(async () => (await reader.counter('shared')).value() === 2, 'reader receives what it may read')
    const attempt = await reader.counter('shared')
    attempt.increment(100)
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.deepEqual(
      (await reader.names()).map((n) => n.name).filter((n) => n.startsWith('private/')),
      [],
      'private names never reach the reader',
    )
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    controller.abort()
  }
  const run = await serving
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /listening on ws:\/\//)
  assert.equal((await cliJson(['inspect', '--dir', dir, 'shared'])).json.value, 2, 'the read-only write was refused')
  assert.equal((await cliJson(['inspect', '--dir', dir, 'private/key'])).json.value, 'k')
  await root.remove()
})

test('ACL files are validated with a clear usage error', async () => {
  assert.throws(() => parseAcl('{'), /not JSON/)
  assert.throws(() => parseAcl('[]'), /must be a JSON object/)
  assert.throws(() => parseAcl('{"default":"admin"}'), /"default"/)
  assert.throws(() => parseAcl('{"rules":[{"access":"all"}]}'), /rule 1/)
  assert.throws(() => parseAcl('{"tokens":{"a":""}}'), /token of "a"/)
  assert.throws(() => parseAcl('{"extra":1}'), /unknown field "extra"/)
  const acl = parseAcl('{"rules":[{"peer":"bot-*","name":"logs/*","access":"write"},{"peer":"*","name":"logs/*","access":"read"}],"default":"none"}')
  assert.equal(acl.access('bot-1' as never, 'logs/x'), 'write')
  assert.equal(acl.access('human' as never, 'logs/x'), 'read')
  assert.equal(acl.access('human' as never, 'other'), 'none')
  const root = await tempDir('concord-acl-bad-')
  try {
    await writeFile(join(root.path, 'bad.json'), '{"default":"everything"}')
    const run = await cli(['serve', '--dir', join(root.path, 'd'), '--acl', join(root.path, 'bad.json')])
    assert.equal(run.code, 2)
    assert.match(run.stderr, /bad\.json: "default"/)
    assert.equal((await cli(['serve', '--dir', join(root.path, 'd'), '--acl', join(root.path, 'missing.json')])).code, 3)
  } finally {
    await root.remove()
  }
})

test('serve --acl refuses rules that name peers when nothing tells peers apart, or two peers with one token (exit 2, saying how to fix it)', async () => {
  const root = await tempDir('concord-acl-ids-')
  const acl = (name: string, body: unknown): Promise<string> => {
    const file = join(root.path, name)
    return writeFile(file, JSON.stringify(body)).then(() => file)
  }
  try {
    const perPeer = await acl('per-peer.json', {
      default: 'read',
      rules: [
        { peer: '*', name: 'open/*', access: 'write' },
        { peer: 'admin', name: '*', access: 'write' },
      ],
    })
    const shared = await cli(['serve', '--dir', join(root.path, 'a'), '--port', '0', '--acl', perPeer, '--token', 'one-shared-secret'])
    assert.equal(shared.code, 2, shared.stderr)
    assert.match(
      shared.stderr,
      /per-peer\.json: rule 2 gives peer "admin" its own access, but peers are not told apart \(--token is one secret shared by every peer\)/,
    )
    assert.match(shared.stderr, /any peer could claim the id "admin".*Give each peer its own token in "tokens"/)
    const open = await cli(['serve', '--dir', join(root.path, 'b'), '--port', '0', '--acl', perPeer])
    assert.equal(open.code, 2, open.stderr)
    assert.match(open.stderr, /no --token and no "tokens": anyone may connect/)
    const twice = await acl('twice.json', {
      tokens: { admin: 'same-token', guest: 'same-token' },
      rules: [{ peer: 'admin', name: '*', access: 'write' }],
      default: 'read',
    })
    const duplicate = await cli(['serve', '--dir', join(root.path, 'c'), '--port', '0', '--acl', twice])
    assert.equal(duplicate.code, 2, duplicate.stderr)
    assert.match(duplicate.stderr, /"tokens" gives "admin" and "guest" one token/)
    for (const dir of ['a', 'b', 'c']) assert.equal((await cli(['inspect', '--dir', join(root.path, dir)])).code, 3, 'refused before the folder is created')

    // Rules by name only do not depend on the id: a shared --token is enough, and the rules apply.
    const byName = await acl('by-name.json', { default: 'write', rules: [{ peer: '*', name: 'ro/*', access: 'read' }] })
    const controller = new AbortController()
    let url = ''
    const serving = cli(['serve', '--dir', join(root.path, 'd'), '--port', '0', '--acl', byName, '--token', 'one-shared-secret'], {
      signal: controller.signal,
      onListening: (info) => {
        url = info.url
      },
    })
    const peer = await createPeer({ agentId: 'anyone', auth: { token: 'one-shared-secret' } })
    try {
      await until(() => url !== '', 'serve listens')
      await peer.connect(url)
      ;(await peer.counter('rw')).increment(1)
      await peer.flush({ acks: 1 })
      ;(await peer.counter('ro/x')).increment(1)
      await peer.flush({ acks: 1 })
    } finally {
      await peer.close()
      controller.abort()
    }
    assert.equal((await serving).code, 0)
    assert.equal((await cliJson(['inspect', '--dir', join(root.path, 'd'), 'rw'])).json.value, 1)
    assert.notEqual((await cliJson(['inspect', '--dir', join(root.path, 'd'), 'ro/x'])).json.value, 1, 'the read-only name was not written')
  } finally {
    await root.remove()
  }
})

test('the real `concord serve --tls-cert --tls-key` process serves wss://; a peer trusting the self-signed certificate syncs; --tls-cert alone is a usage error', async (t) => {
  const root = await tempDir('concord-serve-tls-')
  const certificate = await selfSignedCertificate(root.path)
  if (!certificate) {
    await root.remove()
    return t.skip('openssl is not available')
  }
  const dir = join(root.path, 'relay')
  const alone = await cli(['serve', '--dir', dir, '--tls-cert', certificate.certFile])
  assert.equal(alone.code, 2)
  assert.match(alone.stderr, /--tls-cert and --tls-key go together/)
  assert.equal((await cli(['serve', '--dir', dir, '--tls-cert', certificate.certFile, '--tls-key', join(root.path, 'missing.pem')])).code, 3)

  const server = spawnConcord([
    'serve',
    '--dir',
    dir,
    '--port',
    '0',
    '--json',
    '--token',
    'relay-secret-42',
    '--tls-cert',
    certificate.certFile,
    '--tls-key',
    certificate.keyFile,
  ])
  let stderr = ''
  server.stderr!.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = once(server, 'exit')
  const client = await createPeer({ agentId: 'client', auth: { token: 'relay-secret-42' } })
  try {
    let stdout = ''
    server.stdout!.on('data', (chunk) => {
      stdout += chunk
    })
    await until(() => stdout.includes('\n'), 'serve prints its address', 20_000)
    const info = JSON.parse(stdout.split('\n')[0])
    assert.match(info.url, /^wss:\/\/127\.0\.0\.1:\d+\/concord$/)
    assert.match(info.yWebsocket, /^wss:\/\//)
    await client.connect(info.url, { tls: { ca: certificate.cert } })
    ;(await client.counter('over-tls')).increment(7)
    await client.flush({ acks: 1 })
    server.kill('SIGTERM')
    const [code] = await exited
    assert.equal(code, 0, stderr)
    assert.equal((await cliJson(['inspect', '--dir', dir, 'over-tls'])).json.value, 7)
  } finally {
    if (server.exitCode === null) server.kill('SIGKILL')
    await client.close()
    await root.remove()
  }
})
