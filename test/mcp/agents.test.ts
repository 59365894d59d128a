/**
 * LLM agents through MCP, end to end with real processes and sockets: a
 * `concord serve --mcp --acl` hub (a child process), agent "ana" through a
 * real `concord mcp` child over stdio (its own LevelDB folder and peer,
 * synced with the hub over WebSocket), agent "bo" through streamable HTTP
 * on the hub, and "carol", a Concord peer in this process connected over
 * WebSocket. Both agents use the SDK's own client. They work concurrently
 * on a Yjs text, an OR-set of claims and a counter, and everything
 * converges; history shows each agent; stale conditional writes conflict
 * (text edits merge); subscriptions fire for remote changes; presence
 * travels and expires; bad input gets typed tool errors; a client without
 * the token is refused; a name with access none is invisible.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { ChildProcess } from 'node:child_process'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { createPeer, type Peer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { spawnConcord } from '../cli/helpers.ts'
import { connectClient, wrap, type TestClient } from './helpers.ts'

const ACL = {
  tokens: { ana: 'token-ana', bo: 'token-bo', carol: 'token-carol', eve: 'token-eve' },
  default: 'write',
  rules: [
    { peer: 'bo', name: 'secret/*', access: 'write' },
    { peer: '*', name: 'secret/*', access: 'none' },
  ],
}

interface Fixture {
  readonly url: string
  readonly mcpUrl: string
  readonly ana: TestClient
  readonly anaStderr: () => string
  readonly anaExit: Promise<unknown>
  readonly bo: TestClient
  readonly eve: TestClient
  readonly carol: Peer
  stop(): Promise<void>
}

/** An SDK client over streamable HTTP on the hub, as `agent` with `token`. */
async function httpAgent(mcpUrl: string, agent: string, token: string): Promise<TestClient> {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, 'X-Concord-Peer': agent } },
  })
  const client = await connectClient(transport, agent)
  return wrap(client, async () => {
    await transport.terminateSession().catch(() => undefined)
    await client.close()
  })
}

async function startFixture(): Promise<Fixture> {
  const root = await tempDir('concord-mcp-agents-')
  const aclFile = join(root.path, 'acl.json')
  await writeFile(aclFile, JSON.stringify(ACL))
  const hub = spawnConcord(['serve', '--dir', join(root.path, 'hub'), '--port', '0', '--json', '--id', 'hub', '--acl', aclFile, '--mcp'])
  let hubOut = ''
  let hubErr = ''
  hub.stdout!.on('data', (chunk) => {
    hubOut += chunk
  })
  hub.stderr!.on('data', (chunk) => {
    hubErr += chunk
  })
  const hubExit = once(hub, 'exit')
  const stops: Array<() => Promise<unknown>> = []
  try {
    await until(() => hubOut.includes('\n'), `the hub prints its address (${hubErr})`, 30_000)
    const info = JSON.parse(hubOut.split('\n')[0])
    assert.match(info.mcp, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)

    const anaTransport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', 'cli/main.ts', 'mcp', '--dir', join(root.path, 'ana'), '--id', 'ana', '--connect', info.url, '--token', 'token-ana'],
      stderr: 'pipe',
    })
    let anaErr = ''
    anaTransport.stderr!.on('data', (chunk) => {
      anaErr += chunk
    })
    const anaClient = await connectClient(anaTransport, 'ana')
    const anaChild = (anaTransport as unknown as { _process?: ChildProcess })._process
    const anaExit = anaChild ? once(anaChild, 'exit') : Promise.resolve([0])
    const ana = wrap(anaClient, () => anaClient.close())
    stops.push(() => ana.close())
    await until(() => anaErr.includes('connected to'), `ana's peer connects to the hub (${anaErr})`, 30_000)

    const bo = await httpAgent(info.mcp, 'bo', 'token-bo')
    stops.push(() => bo.close())
    const eve = await httpAgent(info.mcp, 'eve', 'token-eve')
    stops.push(() => eve.close())
    const carol = await createPeer({ agentId: 'carol', dir: join(root.path, 'carol'), auth: { token: 'token-carol' } })
    stops.push(() => carol.close())
    await carol.connect(info.url)
    return {
      url: info.url,
      mcpUrl: info.mcp,
      ana,
      anaStderr: () => anaErr,
      anaExit,
      bo,
      eve,
      carol,
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => undefined)
        hub.kill('SIGTERM')
        const [code] = await hubExit
        await root.remove()
        assert.equal(code, 0, hubErr)
      },
    }
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined)
    hub.kill('SIGKILL')
    await root.remove()
    throw error
  }
}

const text = (doc: Peer, name: string) => doc.yjs(name).then((replica: YjsReplica) => replica.doc.getText('text').toString())

describe('MCP agents over a real `concord serve --mcp` hub, a `concord mcp` child and a WebSocket peer', () => {
  let fx: Fixture
  before(async () => {
    fx = await startFixture()
  })
  after(async () => {
    await fx?.stop()
  })

  it('two agents work concurrently through MCP on a Yjs text, an OR-set of claims and a counter while a third peer writes over WebSocket; all converge; history shows each agent', async () => {
    const { ana, bo, carol } = fx
    const notes = await carol.yjs('notes')
    notes.doc.getText('text').insert(0, '# Findings\n')
    await carol.flush({ acks: 1 })
    await until(async () => (await ana.call('read', { name: 'notes' })).isError === false, 'ana sees the notes')
    const tasks = ['t1', 't2', 't3', 't4', 't5']
    const work = async (agent: TestClient, id: string) => {
      for (const task of tasks) {
        await agent.ok('set_add', { name: 'claims', elements: [`${task}@${id}`], message: `${id} claims ${task}` })
        const read = await agent.ok('read', { name: 'notes' })
        await agent.ok('text_insert', {
          name: 'notes',
          index: read.total,
          text: `[${task}] found by ${id}\n`,
          ifVersion: read.version,
          message: `finding of ${task}`,
        })
        await agent.ok('counter_add', { name: 'tasks-done', amount: 1, message: `${task} done` })
      }
    }
    const carolWork = async () => {
      const done = await carol.counter('tasks-done')
      for (let i = 0; i < 5; i++) {
        notes.doc.getText('text').insert(notes.doc.getText('text').length, `[c${i}] noted by carol\n`)
        done.increment()
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    }
    await Promise.all([work(ana, 'ana'), work(bo, 'bo'), carolWork()])

    const expectedLines = [
      ...tasks.flatMap((t) => [`[${t}] found by ana`, `[${t}] found by bo`]),
      ...[0, 1, 2, 3, 4].map((i) => `[c${i}] noted by carol`),
    ].sort()
    const state = async (agent: TestClient) => {
      const [n, c, d] = await Promise.all([agent.ok('read', { name: 'notes' }), agent.ok('read', { name: 'claims' }), agent.ok('read', { name: 'tasks-done' })])
      return JSON.stringify({ notes: n.text, claims: c.value, done: d.value })
    }
    await until(
      async () => {
        const [a, b] = await Promise.all([state(ana), state(bo)])
        const c = JSON.stringify({
          notes: await text(carol, 'notes'),
          claims: (await carol.set('claims')).value(),
          done: (await carol.counter('tasks-done')).value(),
        })
        return a === b && b === c
      },
      'ana, bo (the hub) and carol hold the same state',
      30_000,
    )
    const final = JSON.parse(await state(bo))
    assert.equal(final.done, 15, 'every add counted once')
    assert.equal(final.claims.length, 10)
    const lines = final.notes.split('\n').filter((line: string) => line.startsWith('['))
    assert.deepEqual([...lines].sort(), expectedLines, 'every line whole, exactly once')
    assert.ok(final.notes.startsWith('# Findings\n'))

    // The hub logs each change under the agent that made it: the MCP client of the hub, ana's peer, carol's peer.
    for (const name of ['notes', 'claims', 'tasks-done']) {
      const history = await bo.ok('history', { name, limit: 100 })
      const agents = new Set(history.records.map((r: { agent: string }) => r.agent))
      for (const agent of name === 'claims' ? ['ana', 'bo'] : ['ana', 'bo', 'carol']) assert.ok(agents.has(agent), `${name}: ${agent} in ${[...agents]}`)
    }
    const byBo = await bo.ok('history', { name: 'notes', agent: 'bo', limit: 100 })
    assert.equal(byBo.records.length, 5)
    // ... with its messages: ana's claims reached the hub through ana's own peer (a `concord mcp` child), and keep why she made them.
    const claims = await bo.ok('history', { name: 'claims', limit: 100 })
    for (const id of ['ana', 'bo']) {
      const said = claims.records
        .filter((r: { agent: string }) => r.agent === id)
        .map((r: { message?: string }) => r.message)
        .sort()
      assert.deepEqual(
        said,
        tasks.map((task) => `${id} claims ${task}`),
        `${id}'s claims carry their messages on the hub`,
      )
    }
    for (const r of claims.records as Array<{ meta?: { via?: string; tool?: string } }>) assert.deepEqual(r.meta, { via: 'mcp', tool: 'set_add' })
    // blame on the hub: each agent's lines are its own.
    const blame = await bo.ok('blame', { name: 'notes' })
    for (const span of blame.blame.spans as Array<{ text: string; agent: string }>) {
      const by = /found by (\w+)|noted by (\w+)/.exec(span.text)
      if (by) assert.equal(span.agent, by[1] ?? by[2], span.text)
    }
  })

  it('a stale conditional write gets the conflict result with what changed; a stale text edit merges and says so', async () => {
    const { ana, bo, carol } = fx
    await bo.ok('register_set', { name: 'plan', value: { step: 1 } })
    await until(async () => (await ana.call('read', { name: 'plan' })).body.value?.step === 1, 'ana sees the plan')
    const read = await ana.ok('read', { name: 'plan' })
    await bo.ok('register_set', { name: 'plan', value: { step: 2 }, message: 'bo moves the plan on' })
    await until(async () => (await ana.ok('read', { name: 'plan' })).value.step === 2, "bo's change reaches ana's peer")
    const stale = await ana.call('register_set', { name: 'plan', value: { step: 3 }, ifVersion: read.version, message: 'on a stale view' })
    assert.equal(stale.isError, true)
    assert.equal(stale.body.error.code, 'CONCORD_CONFLICT')
    assert.deepEqual(stale.body.changes, { kind: 'value', from: { step: 1 }, to: { step: 2 } })
    assert.equal(stale.body.changedBy.records, 1)
    assert.deepEqual((await bo.ok('read', { name: 'plan' })).value, { step: 2 }, 'nothing was written anywhere')

    const draft = await carol.yjs('draft')
    draft.doc.getText('text').insert(0, 'The quick fox.')
    await until(async () => (await ana.call('read', { name: 'draft' })).body.text === 'The quick fox.', 'ana reads the draft')
    const seen = await ana.ok('read', { name: 'draft' })
    draft.doc.getText('text').delete(4, 6)
    draft.doc.getText('text').insert(4, 'slow ')
    await until(async () => (await ana.ok('read', { name: 'draft' })).text === 'The slow fox.', "carol's edit reaches ana's peer")
    const merged = await ana.ok('text_insert', { name: 'draft', index: seen.text.indexOf('fox'), text: 'brown ', ifVersion: seen.version, message: 'colour' })
    assert.equal(merged.concurrent, true)
    await until(async () => (await text(carol, 'draft')) === 'The slow brown fox.', 'the merged edit everywhere')
    assert.equal((await bo.ok('read', { name: 'draft' })).text, 'The slow brown fox.')
  })

  it('subscriptions fire for changes made on another peer, over stdio and over HTTP', async () => {
    const { ana, bo, carol } = fx
    const board = await carol.counter('board')
    board.increment()
    await until(async () => !(await ana.call('read', { name: 'board' })).isError && !(await bo.call('read', { name: 'board' })).isError, 'board everywhere')
    await ana.client.subscribeResource({ uri: 'concord://name/board' })
    await bo.client.subscribeResource({ uri: 'concord://name/board' })
    ana.updates.length = 0
    bo.updates.length = 0
    board.increment()
    await until(() => ana.updates.includes('concord://name/board') && bo.updates.includes('concord://name/board'), "both notified of carol's change")
    bo.updates.length = 0
    await ana.ok('counter_add', { name: 'board', amount: 2 })
    await until(() => bo.updates.includes('concord://name/board'), "bo notified of ana's change (through ana's peer and the hub)")
    const body = JSON.parse(((await bo.client.readResource({ uri: 'concord://name/board' })).contents[0] as { text: string }).text)
    assert.equal(body.value, 4)
  })

  it('presence set by one agent appears at the others (and at a plain peer) and expires', async () => {
    const { ana, bo, carol } = fx
    await ana.ok('presence', { action: 'set', status: 'reviewing the notes', name: 'notes', ttlSeconds: 2 })
    await until(async () => (await bo.ok('presence', {})).agents.some((a: { agent: string }) => a.agent === 'ana'), 'bo sees ana')
    const seen = (await bo.ok('presence', {})).agents.find((a: { agent: string }) => a.agent === 'ana')
    assert.deepEqual({ status: seen.status, name: seen.name, peer: seen.peer }, { status: 'reviewing the notes', name: 'notes', peer: 'ana' })
    await until(() => carol.presence.list().some((info) => info.agent === 'ana'), 'carol, a plain peer, sees ana too')
    await bo.ok('presence', { action: 'set', status: 'writing', ttlSeconds: 60 })
    await until(async () => (await ana.ok('presence', {})).agents.some((a: { agent: string }) => a.agent === 'bo'), 'ana sees bo')
    await until(async () => !(await bo.ok('presence', {})).agents.some((a: { agent: string }) => a.agent === 'ana'), "ana's entry expires", 10_000)
    await bo.ok('presence', { action: 'clear' })
    await until(async () => !(await ana.ok('presence', {})).agents.some((a: { agent: string }) => a.agent === 'bo'), "bo's entry cleared at ana")
  })

  it('bad input through the stdio child and over HTTP: typed tool errors, and both servers keep answering', async () => {
    const { ana, bo, mcpUrl } = fx
    for (const agent of [ana, bo]) {
      for (const [tool, args, code] of [
        ['text_insert', { name: 'notes', index: 0, text: 'x'.repeat(1024 * 1024) }, 'CONCORD_INVALID_ARGUMENT'],
        ['counter_add', { name: 'tasks-done', amount: 'many' }, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 'nowhere' }, 'CONCORD_NOT_FOUND'],
        ['read', { name: 'plan', path: '/no/such/path' }, 'CONCORD_NOT_FOUND'],
        ['map_delete', { name: 'nowhere', path: ['x'] }, 'CONCORD_NOT_FOUND'],
        ['json_patch', { name: 'plan', patch: [{ op: 'add', path: '/x', value: 1 }] }, 'CONCORD_TYPE_MISMATCH'],
      ] as const) {
        const answer = await agent.call(tool, args)
        assert.equal(answer.body.error?.code, code, `${tool}: ${answer.text.slice(0, 200)}`)
      }
      assert.equal((await agent.ok('read', { name: 'tasks-done' })).value, 15, 'still answering')
    }
    // Over HTTP, a body over the limit is refused before it is parsed; the route stays up.
    const huge = await fetch(mcpUrl, {
      method: 'POST',
      headers: { Authorization: 'Bearer token-bo', 'X-Concord-Peer': 'bo', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { blob: 'x'.repeat(5 * 1024 * 1024) } }),
    })
    assert.equal(huge.status, 413)
    assert.equal((await bo.ok('read', { name: 'tasks-done' })).value, 15)
  })

  it("an MCP client without the token, or with another agent's, is refused over HTTP; a name with access none is invisible over MCP", async () => {
    const { ana, bo, eve, mcpUrl } = fx
    const initialize = (headers: Record<string, string>) =>
      fetch(mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      })
    const anonymous = await initialize({})
    assert.equal(anonymous.status, 401)
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="concord"')
    assert.equal((await initialize({ Authorization: 'Bearer token-eve', 'X-Concord-Peer': 'bo' })).status, 401, "eve's token does not prove bo")
    assert.equal((await initialize({ Authorization: 'Bearer wrong', 'X-Concord-Peer': 'eve' })).status, 401)
    await assert.rejects(connectClient(new StreamableHTTPClientTransport(new URL(mcpUrl))), /401|Unauthorized|CONCORD_AUTH_FAILED/)
    // A browser page (an Origin header) is refused even with credentials.
    assert.equal((await initialize({ Authorization: 'Bearer token-eve', 'X-Concord-Peer': 'eve', Origin: 'https://evil.example' })).status, 403)
    // bo's session id with eve's credentials: as if there were no such session.
    const sessionId = (bo.client.transport as StreamableHTTPClientTransport).sessionId!
    const hijack = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        Authorization: 'Bearer token-eve',
        'X-Concord-Peer': 'eve',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    })
    assert.equal(hijack.status, 404)
    // Sessions are bounded per agent (16): eve has one open; 15 more, then the next is refused 503.
    const opened: number[] = []
    for (let i = 0; i < 16; i++) opened.push((await initialize({ Authorization: 'Bearer token-eve', 'X-Concord-Peer': 'eve' })).status)
    assert.deepEqual(opened, [...Array(15).fill(200), 503])
    assert.equal((await eve.ok('read', { name: 'tasks-done' })).value, 15, 'the sessions already open go on')

    await bo.ok('register_set', { name: 'secret/plan', value: 'the surprise', message: 'only bo may know' })
    await bo.ok('counter_add', { name: 'public/visits', amount: 1 })
    for (const client of [eve, ana]) {
      await until(async () => !(await client.call('read', { name: 'public/visits' })).isError, 'the public name arrives')
      const names = (await client.ok('list_names', { prefix: 'secret/' })).names
      assert.deepEqual(names, [], 'not listed')
      const hidden = await client.call('read', { name: 'secret/plan' })
      const absent = await client.call('read', { name: 'secret/none' })
      assert.equal(hidden.body.error.code, 'CONCORD_NOT_FOUND')
      assert.equal(hidden.text.replace('secret/plan', 'X'), absent.text.replace('secret/none', 'X'))
      const resources = (await client.client.listResources()).resources.map((r) => r.name)
      assert.ok(!resources.includes('secret/plan'))
    }
    // eve writes through the hub: refused as an absent name. ana's own peer takes her write (it is her folder),
    // and the hub refuses it when it arrives, as it refuses a write to a name that does not exist.
    assert.equal((await eve.call('register_set', { name: 'secret/plan', value: 'tampered' })).body.error.code, 'CONCORD_NOT_FOUND')
    await ana.ok('register_set', { name: 'secret/plan', value: 'tampered by ana' })
    await ana.ok('counter_add', { name: 'public/visits', amount: 1 })
    await until(async () => (await bo.ok('read', { name: 'public/visits' })).value === 2, "ana's later write arrives (the session is in order)")
    assert.equal((await bo.ok('read', { name: 'secret/plan' })).text, 'the surprise', 'untouched')
  })

  it('the stdio child ends when its client closes stdin, flushing its folder', async () => {
    await fx.ana.close()
    const [code] = (await fx.anaExit) as [number]
    assert.equal(code, 0, fx.anaStderr())
    assert.match(fx.anaStderr(), /the client closed stdin: flushing and closing/)
  })
})
