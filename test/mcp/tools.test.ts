/**
 * The MCP tools through the SDK's own client, against a peer on a real
 * LevelDB folder (the server in this process, over the SDK's linked
 * transport pair): every type read and written, conditional writes and
 * text edits on a stale view, JSON Patch all or none, history, at, diff,
 * blame and revert checked against what was written, pages, bad input,
 * access rules (invisible names, read-only clients) and prompts.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { remotePrincipal } from '../../mcp/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { inProcess, type TestClient } from './helpers.ts'

async function withPeer(fn: (peer: Peer) => Promise<void>, options: Partial<PeerOptions> = {}): Promise<void> {
  const dir = await tempDir('concord-mcp-tools-')
  const peer = await createPeer({ agentId: 'hub', dir: join(dir.path, 'hub'), ...options })
  try {
    await fn(peer)
  } finally {
    await peer.close()
    await dir.remove()
  }
}

async function clients(peer: Peer, ...agents: string[]): Promise<TestClient[]> {
  return Promise.all(agents.map((agent) => inProcess(peer, remotePrincipal(peer, agent))))
}

test('every type is read and written through its tools; each write answers a new version and its seq', () =>
  withPeer(async (peer) => {
    const [ana] = await clients(peer, 'ana')
    try {
      assert.equal((await ana.ok('counter_add', { name: 'done', amount: 5, message: 'five tasks' })).value, 5)
      assert.equal((await ana.ok('counter_add', { name: 'done', amount: -2 })).value, 3)
      assert.deepEqual((await ana.ok('set_add', { name: 'claims', elements: ['a@ana', { task: 'b' }] })).added, ['a@ana', { task: 'b' }])
      const removed = await ana.ok('set_remove', { name: 'claims', elements: ['a@ana', 'never-there'] })
      assert.deepEqual([removed.removed, removed.missing, removed.size], [['a@ana'], ['never-there'], 1])
      await ana.ok('register_set', { name: 'plan', value: { step: 1, tasks: ['x'] } })
      assert.deepEqual((await ana.ok('read', { name: 'plan' })).value, { step: 1, tasks: ['x'] })
      assert.equal((await ana.ok('flag_set', { name: 'ready', enabled: true })).enabled, true)
      await ana.ok('map_set', { name: 'facts', path: ['sources', 'wiki'], value: 'https://example.org' })
      await ana.ok('map_set', { name: 'facts', path: ['meta'], value: { tags: ['a'] } })
      await ana.ok('map_set', { name: 'facts', path: ['meta', 'tags', '1'], value: 'b' })
      await ana.ok('map_delete', { name: 'facts', path: ['sources', 'wiki'] })
      assert.deepEqual((await ana.ok('read', { name: 'facts' })).value, { meta: { tags: ['a', 'b'] } }, 'an emptied nested map is gone')
      await ana.ok('json_patch', {
        name: 'spec',
        patch: [
          { op: 'add', path: '/items', value: ['one'] },
          { op: 'add', path: '/items/-', value: 'two' },
          { op: 'add', path: '/title', value: 'draft' },
        ],
      })
      await ana.ok('json_patch', {
        name: 'spec',
        patch: [
          { op: 'replace', path: '/title', value: 'final draft' },
          { op: 'move', from: '/items/0', path: '/items/1' },
          { op: 'copy', from: '/title', path: '/subtitle' },
        ],
      })
      assert.deepEqual((await ana.ok('read', { name: 'spec' })).value, { items: ['two', 'one'], subtitle: 'final draft', title: 'final draft' })
      await ana.ok('json_patch', {
        name: 'board',
        type: 'ormap',
        patch: [
          { op: 'add', path: '/lanes', value: { todo: ['t1'] } },
          { op: 'add', path: '/lanes/todo/-', value: 't2' },
        ],
      })
      assert.deepEqual((await ana.ok('read', { name: 'board' })).value, { lanes: { todo: ['t1', 't2'] } })

      const first = await ana.ok('text_insert', { name: 'notes', index: 0, text: 'Hello world' })
      assert.equal(first.field, 'text')
      await ana.ok('text_insert', { name: 'notes', index: 5, text: ',' })
      await ana.ok('text_replace_match', { name: 'notes', find: 'world', replace: 'agents' })
      await ana.ok('text_replace', { name: 'notes', index: 0, length: 5, text: 'Hi' })
      await ana.ok('text_delete', { name: 'notes', index: 2, length: 1 })
      const text = await ana.ok('read', { name: 'notes' })
      assert.equal(text.text, 'Hi agents')
      assert.match(text.version, /^v1\.\d+\.[0-9a-f]{20}$/)
      const again = await ana.ok('text_insert', { name: 'notes', index: 9, text: '!', ifVersion: text.version })
      assert.equal(again.concurrent, undefined, 'a current version: no merge needed')
      assert.notEqual(again.version, text.version)
      assert.equal(again.seq, 6)

      // The values are the peer's: what a program using the peer directly sees.
      assert.equal((await peer.counter('done')).value(), 3)
      assert.equal((await peer.yjs('notes')).doc.getText('text').toString(), 'Hi agents!')
      // Every change is logged under the client's agent.
      assert.deepEqual([...new Set((await peer.history('notes')).map((r) => r.agent))], ['ana'])
    } finally {
      await ana.close()
    }
  }))

test('a stale conditional write is refused with what changed and who; text edits on a stale view merge as concurrent Yjs edits', () =>
  withPeer(async (peer) => {
    const [ana, bo] = await clients(peer, 'ana', 'bo')
    try {
      await ana.ok('register_set', { name: 'plan', value: { step: 1 } })
      const read = await ana.ok('read', { name: 'plan' })
      await bo.ok('register_set', { name: 'plan', value: { step: 2 }, message: 'bo moves on' })
      const stale = await ana.call('register_set', { name: 'plan', value: { step: 3 }, ifVersion: read.version })
      assert.equal(stale.isError, true)
      assert.equal(stale.body.error.code, 'CONCORD_CONFLICT')
      assert.deepEqual(stale.body.changes, { kind: 'value', from: { step: 1 }, to: { step: 2 } })
      assert.deepEqual(stale.body.changedBy, { records: 1, agents: ['bo'] })
      assert.deepEqual((await ana.ok('read', { name: 'plan' })).value, { step: 2 }, 'nothing was written')
      assert.equal((await peer.history('plan')).length, 2)
      // With the version it was told, the write goes through.
      await ana.ok('register_set', { name: 'plan', value: { step: 3 }, ifVersion: stale.body.version })
      assert.deepEqual((await ana.ok('read', { name: 'plan' })).value, { step: 3 })

      // Sets and counters conflict the same way.
      await ana.ok('set_add', { name: 'claims', elements: ['t1@ana'] })
      const claims = await ana.ok('read', { name: 'claims' })
      await bo.ok('set_add', { name: 'claims', elements: ['t1@bo'] })
      const claim = await ana.call('set_add', { name: 'claims', elements: ['t2@ana'], ifVersion: claims.version })
      assert.equal(claim.body.error.code, 'CONCORD_CONFLICT')
      assert.deepEqual(claim.body.changes, { kind: 'set', added: ['t1@bo'], removed: [] })

      // Text: ana inserts where she read "fox"; bo meanwhile replaced "quick". The insert lands before "fox" all the same.
      await ana.ok('text_insert', { name: 'notes', index: 0, text: 'The quick fox.' })
      const seen = await ana.ok('read', { name: 'notes' })
      await bo.ok('text_replace_match', { name: 'notes', find: 'quick', replace: 'slow' })
      const merged = await ana.ok('text_insert', { name: 'notes', index: seen.text.indexOf('fox'), text: 'brown ', ifVersion: seen.version })
      assert.equal(merged.concurrent, true)
      assert.equal((await ana.ok('read', { name: 'notes' })).text, 'The slow brown fox.')
      assert.deepEqual(
        merged.changes.fields[0].spans.map((s: { op: string; text: string }) => `${s.op}:${s.text}`),
        ['delete:quick', 'insert:slow'],
      )

      // A deletion on a stale view takes only what was read: text inserted since inside the range stays.
      await ana.ok('text_replace', { name: 'notes', index: 0, length: 19, text: 'abcdef' })
      const before = await ana.ok('read', { name: 'notes' })
      await bo.ok('text_insert', { name: 'notes', index: 3, text: 'XYZ' })
      const deleted = await ana.ok('text_delete', { name: 'notes', index: 2, length: 2, ifVersion: before.version })
      assert.equal(deleted.concurrent, true)
      assert.equal(deleted.deleted, 2)
      assert.equal((await ana.ok('read', { name: 'notes' })).text, 'abXYZef')
      // replace_match finds the match in the text as read, not as it is now.
      const view = await ana.ok('read', { name: 'notes' })
      await bo.ok('text_insert', { name: 'notes', index: 0, text: 'ef ' })
      await ana.ok('text_replace_match', { name: 'notes', find: 'ef', replace: 'EF', ifVersion: view.version })
      assert.equal((await ana.ok('read', { name: 'notes' })).text, 'ef abXYZEF')
    } finally {
      await ana.close()
      await bo.close()
    }
  }))

test('JSON Patch applies all or none: a failing operation, a failed test and a path through a counter change nothing', () =>
  withPeer(async (peer) => {
    const [ana] = await clients(peer, 'ana')
    try {
      await ana.ok('json_patch', { name: 'spec', patch: [{ op: 'add', path: '/items', value: ['a'] }] })
      const records = (await peer.history('spec')).length
      const missing = await ana.call('json_patch', {
        name: 'spec',
        patch: [
          { op: 'add', path: '/items/-', value: 'b' },
          { op: 'remove', path: '/no/such/path' },
        ],
      })
      assert.equal(missing.body.error.code, 'CONCORD_NOT_FOUND')
      const failedTest = await ana.call('json_patch', {
        name: 'spec',
        patch: [
          { op: 'test', path: '/items/0', value: 'z' },
          { op: 'add', path: '/items/-', value: 'b' },
        ],
      })
      assert.equal(failedTest.body.error.code, 'CONCORD_CONFLICT')
      assert.deepEqual((await ana.ok('read', { name: 'spec' })).value, { items: ['a'] })
      assert.equal((await peer.history('spec')).length, records, 'no record written')

      const board = await peer.map('board')
      board.set('title', 'Board')
      board.counter('visits').increment(2)
      await peer.flush()
      const throughCounter = await ana.call('json_patch', {
        name: 'board',
        patch: [
          { op: 'replace', path: '/title', value: 'Renamed' },
          { op: 'replace', path: '/visits', value: 9 },
        ],
      })
      assert.equal(throughCounter.body.error.code, 'CONCORD_INVALID_ARGUMENT')
      assert.deepEqual((await ana.ok('read', { name: 'board' })).value, { title: 'Board', visits: 2 }, 'the first operation was not applied either')
      const setThrough = await ana.call('map_set', { name: 'board', path: ['visits', 'x'], value: 1 })
      assert.equal(setThrough.body.error.code, 'CONCORD_INVALID_ARGUMENT')
      const deleteMissing = await ana.call('map_delete', { name: 'board', path: ['nothing'] })
      assert.equal(deleteMissing.body.error.code, 'CONCORD_NOT_FOUND')
      assert.match(deleteMissing.body.error.message, /path \/nothing does not exist/)
    } finally {
      await ana.close()
    }
  }))

test('history, at, diff, blame and revert tell who wrote what, checked against the edits made', () =>
  withPeer(async (peer) => {
    const [ana, bo] = await clients(peer, 'ana', 'bo')
    try {
      await ana.ok('text_insert', { name: 'notes', index: 0, text: 'Hello ', message: 'greeting' })
      await bo.ok('text_insert', { name: 'notes', index: 6, text: 'world' })
      await ana.ok('text_insert', { name: 'notes', index: 11, text: '!' })
      await bo.ok('text_insert', { name: 'notes', index: 0, text: '>> ' })
      const history = await ana.ok('history', { name: 'notes' })
      assert.deepEqual(
        history.records.map((r: { seq: number; agent: string }) => `${r.seq}:${r.agent}`),
        ['4:bo', '3:ana', '2:bo', '1:ana'],
      )
      assert.ok(history.records.every((r: { at: string }) => !Number.isNaN(Date.parse(r.at))))
      // The write's message is kept in its record, with the tool that made it.
      assert.deepEqual(
        history.records.map((r: { message?: string; meta?: unknown }) => [r.message, r.meta]),
        [
          [undefined, { tool: 'text_insert', via: 'mcp' }],
          [undefined, { tool: 'text_insert', via: 'mcp' }],
          [undefined, { tool: 'text_insert', via: 'mcp' }],
          ['greeting', { tool: 'text_insert', via: 'mcp' }],
        ],
      )
      const page = await ana.ok('history', { name: 'notes', limit: 2 })
      assert.deepEqual([page.records.length, page.nextBefore], [2, 3])
      const older = await ana.ok('history', { name: 'notes', limit: 2, before: page.nextBefore })
      assert.deepEqual(
        older.records.map((r: { seq: number }) => r.seq),
        [2, 1],
      )
      assert.equal(older.nextBefore, undefined)
      assert.deepEqual(
        (await ana.ok('history', { name: 'notes', agent: 'bo' })).records.map((r: { seq: number }) => r.seq),
        [4, 2],
      )

      assert.equal((await ana.ok('at', { name: 'notes', seq: 2 })).text, 'Hello world')
      assert.equal((await ana.ok('at', { name: 'notes', seq: 0 })).value !== undefined, true)
      const diff = await ana.ok('diff', { name: 'notes', from: 1, to: 3 })
      assert.deepEqual(diff.changes.fields[0].spans, [{ op: 'insert', at: 6, text: 'world!' }])

      const blame = await ana.ok('blame', { name: 'notes' })
      assert.deepEqual(
        blame.blame.spans.map((s: { text: string; agent: string; seq: number }) => `${s.text}|${s.agent}|${s.seq}`),
        ['>> |bo|4', 'Hello |ana|1', 'world|bo|2', '!|ana|3'],
      )

      for (const [who, amount] of [
        ['ana', 2],
        ['bo', 5],
        ['ana', -1],
      ] as const)
        await (who === 'ana' ? ana : bo).ok('counter_add', { name: 'done', amount })
      const counter = await ana.ok('blame', { name: 'done' })
      assert.deepEqual(counter.blame.contributions, [
        { agent: 'bo', amount: 5, records: 1 },
        { agent: 'ana', amount: 1, records: 2 },
      ])
      assert.deepEqual((await ana.ok('diff', { name: 'done', from: 1 })).changes, { kind: 'counter', from: 2, to: 6, delta: 4 })

      await ana.ok('set_add', { name: 'claims', elements: ['t1@ana'] })
      await bo.ok('set_add', { name: 'claims', elements: ['t2@bo'] })
      await ana.ok('set_remove', { name: 'claims', elements: ['t1@ana'] })
      const set = await bo.ok('blame', { name: 'claims' })
      assert.deepEqual(
        set.blame.elements.map((e: { element: string; agent: string }) => `${e.element}|${e.agent}`),
        ['t2@bo|bo'],
      )

      await ana.ok('map_set', { name: 'facts', path: ['owner'], value: 'ana' })
      await bo.ok('map_set', { name: 'facts', path: ['status'], value: 'open' })
      await bo.ok('map_set', { name: 'facts', path: ['owner'], value: 'bo' })
      const paths = await ana.ok('blame', { name: 'facts' })
      assert.deepEqual(
        paths.blame.paths.map((p: { path: string; agent: string; seq: number }) => `${p.path}|${p.agent}|${p.seq}`),
        ['/owner|bo|3', '/status|bo|2'],
      )

      // A blame limited to the newest records reports older content as such.
      const recent = await ana.ok('blame', { name: 'notes', limit: 2 })
      assert.deepEqual(
        recent.blame.spans.map(
          (s: { text: string; agent: string | null; seq?: number; before?: number }) => `${s.text}|${s.agent}|${s.seq ?? `before ${s.before}`}`,
        ),
        ['>> |bo|4', 'Hello world|null|before 3', '!|ana|3'],
      )

      // Revert: a new change, by the agent that reverts, back to the value at seq 1.
      const reverted = await bo.ok('revert', { name: 'notes', seq: 1, message: 'too much' })
      assert.equal(reverted.seq, 5)
      assert.equal((await ana.ok('read', { name: 'notes' })).text, 'Hello ')
      assert.equal((await peer.history('notes')).at(-1)!.agent, 'bo')
      assert.equal((await bo.ok('revert', { name: 'notes', seq: 5 })).seq, null, 'already equal: nothing to do')
    } finally {
      await ana.close()
      await bo.close()
    }
  }))

test("large values come in pages that fit a model's context; the pages read back the whole value", () =>
  withPeer(async (peer) => {
    const [ana] = await clients(peer, 'ana')
    try {
      const line = 'Shared memory for agents, merged without conflicts. '
      const text = line.repeat(2000)
      for (let at = 0; at < text.length; at += 200_000) await ana.ok('text_insert', { name: 'book', index: at, text: text.slice(at, at + 200_000) })
      let read = ''
      let offset: number | undefined = 0
      let pages = 0
      while (offset !== undefined) {
        const page: Record<string, any> = await ana.ok('read', { name: 'book', offset }) // eslint-disable-line @typescript-eslint/no-explicit-any
        assert.ok(JSON.stringify(page).length < 30_000, 'each page fits')
        assert.equal(page.total, text.length)
        read += page.text
        offset = page.nextOffset
        pages++
      }
      assert.equal(read, text)
      assert.ok(pages >= 7)
      const big = Array.from({ length: 3000 }, (_, i) => ({ i, note: `item ${i}` }))
      await ana.ok('register_set', { name: 'list', value: big })
      const first = await ana.ok('read', { name: 'list' })
      assert.equal(first.kind, 'array')
      assert.equal(first.total, 3000)
      assert.equal(first.value.length, 200)
      assert.equal(first.nextOffset, 200)
      assert.deepEqual((await ana.ok('read', { name: 'list', path: '/2999' })).value, { i: 2999, note: 'item 2999' })
      const huge = await ana.ok('read', { name: 'list', offset: 2990, limit: 50 })
      assert.deepEqual([huge.value.length, huge.nextOffset], [10, undefined])
      // A nested part too large for a page is a stub saying where it is.
      await ana.ok('map_set', { name: 'm', path: ['blob'], value: 'x'.repeat(200_000) })
      await ana.ok('map_set', { name: 'm', path: ['small'], value: 1 })
      const stubbed = await ana.ok('read', { name: 'm' })
      assert.deepEqual(stubbed.value.blob, { $more: { path: '/blob', chars: 200_002 } })
      assert.equal(stubbed.value.small, 1)
      assert.equal((await ana.ok('read', { name: 'm', path: '/blob', limit: 10 })).text, 'xxxxxxxxxx')
    } finally {
      await ana.close()
    }
  }))

test('bad input: wrong types, huge strings, unknown names and tools, paths that do not exist, bad tokens are typed tool errors and the server goes on', () =>
  withPeer(async (peer) => {
    const [ana] = await clients(peer, 'ana')
    try {
      await ana.ok('text_insert', { name: 'notes', index: 0, text: 'abc' })
      await ana.ok('counter_add', { name: 'done', amount: 1 })
      const huge = 'x'.repeat(1024 * 1024)
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ['read', {}, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 42 }, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 'notes', extra: true }, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 'x'.repeat(1025) }, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 'no-such-name' }, 'CONCORD_NOT_FOUND'],
        ['read', { name: 'notes', path: '/nothing' }, 'CONCORD_NOT_FOUND'],
        ['read', { name: 'notes', path: 'no-slash' }, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 'notes', offset: -1 }, 'CONCORD_INVALID_ARGUMENT'],
        ['read', { name: 'notes', field: 'text', path: '/text' }, 'CONCORD_INVALID_ARGUMENT'],
        ['counter_add', { name: 'done', amount: 1.5 }, 'CONCORD_INVALID_ARGUMENT'],
        ['counter_add', { name: 'done', amount: '3' }, 'CONCORD_INVALID_ARGUMENT'],
        ['counter_add', { name: 'done', amount: 0 }, 'CONCORD_INVALID_ARGUMENT'],
        ['counter_add', { name: 'notes', amount: 1 }, 'CONCORD_TYPE_MISMATCH'],
        ['text_insert', { name: 'notes', index: 99, text: 'x' }, 'CONCORD_INVALID_ARGUMENT'],
        ['text_insert', { name: 'notes', index: 0, text: huge }, 'CONCORD_INVALID_ARGUMENT'],
        ['text_insert', { name: 'done', index: 0, text: 'x' }, 'CONCORD_TYPE_MISMATCH'],
        ['text_replace_match', { name: 'notes', find: 'zzz', replace: 'y' }, 'CONCORD_NOT_FOUND'],
        ['text_delete', { name: 'no-such-doc', index: 0, length: 1 }, 'CONCORD_NOT_FOUND'],
        ['text_insert', { name: 'fresh-doc', index: 5, text: 'x' }, 'CONCORD_INVALID_ARGUMENT'],
        ['json_patch', { name: 'fresh-spec', patch: [{ op: 'remove', path: '/x' }] }, 'CONCORD_NOT_FOUND'],
        ['flag_set', { name: 'fresh-flag', enabled: false }, 'CONCORD_NOT_FOUND'],
        ['register_set', { name: 'r', value: { deep: huge.slice(0, 300_000) } }, 'CONCORD_LIMIT_EXCEEDED'],
        ['set_add', { name: 's', elements: [] }, 'CONCORD_INVALID_ARGUMENT'],
        ['set_remove', { name: 'absent-set', elements: ['x'] }, 'CONCORD_NOT_FOUND'],
        ['map_delete', { name: 'absent-map', path: ['x'] }, 'CONCORD_NOT_FOUND'],
        ['map_set', { name: 'm', path: [], value: 1 }, 'CONCORD_INVALID_ARGUMENT'],
        ['json_patch', { name: 'p', patch: [{ op: 'explode', path: '/x' }] }, 'CONCORD_INVALID_ARGUMENT'],
        ['json_patch', { name: 'p', patch: [{ op: 'add', path: 'x', value: 1 }] }, 'CONCORD_INVALID_ARGUMENT'],
        ['register_set', { name: 'r', value: 1, ifVersion: 'not-a-token' }, 'CONCORD_INVALID_ARGUMENT'],
        ['history', { name: 'notes', limit: 1000 }, 'CONCORD_INVALID_ARGUMENT'],
        ['at', { name: 'notes', seq: 99 }, 'CONCORD_INVALID_ARGUMENT'],
        ['diff', { name: 'no-such-name', from: 0 }, 'CONCORD_NOT_FOUND'],
        ['revert', { name: 'notes', seq: 99 }, 'CONCORD_INVALID_ARGUMENT'],
        ['presence', { action: 'set', status: 'x', ttlSeconds: 100_000 }, 'CONCORD_INVALID_ARGUMENT'],
        ['presence', { action: 'set', status: huge.slice(0, 5000) }, 'CONCORD_LIMIT_EXCEEDED'],
        ['no_such_tool', {}, 'CONCORD_INVALID_ARGUMENT'],
      ]
      for (const [tool, args, code] of cases) {
        const answer = await ana.call(tool, args)
        assert.equal(answer.isError, true, `${tool} ${JSON.stringify(args).slice(0, 80)}: an error`)
        assert.equal(answer.body.error?.code, code, `${tool} ${JSON.stringify(args).slice(0, 80)}: ${answer.text.slice(0, 200)}`)
        assert.ok(answer.text.startsWith(`${code}: `), 'the text starts with the code')
        assert.ok(answer.text.length < 2000, 'a short message (no value echoed back)')
      }
      assert.equal((await ana.ok('read', { name: 'notes' })).text, 'abc', 'nothing changed, the server answers')
      for (const name of ['no-such-doc', 'fresh-doc', 'fresh-spec', 'fresh-flag', 's', 'r', 'm', 'p']) {
        assert.equal(await peer.store.typeOf(name), undefined, `a refused write creates no name (${name})`)
      }
    } finally {
      await ana.close()
    }
  }))

test('a name the client may not read is invisible to every tool, resource and presence entry; a read-only client cannot write', () =>
  withPeer(
    async (peer) => {
      ;(await peer.register('secret/plan')).set('classified')
      ;(await peer.counter('public/count')).increment()
      ;(await peer.register('ro/plan')).set('visible')
      await peer.flush()
      const [eve, rita] = await clients(peer, 'eve', 'rita')
      try {
        const listed = (await eve.ok('list_names', {})).names.map((n: { name: string }) => n.name)
        assert.deepEqual(listed, ['public/count', 'ro/plan'])
        const sameWords = async (tool: string, args: (name: string) => Record<string, unknown>) => {
          const hidden = await eve.call(tool, args('secret/plan'))
          const absent = await eve.call(tool, args('secret/absent'))
          assert.equal(hidden.body.error?.code, 'CONCORD_NOT_FOUND', `${tool}: ${hidden.text}`)
          assert.equal(hidden.text.replace('secret/plan', 'X'), absent.text.replace('secret/absent', 'X'), `${tool}: in the words of an absent name`)
        }
        await sameWords('read', (name) => ({ name }))
        await sameWords('history', (name) => ({ name }))
        await sameWords('at', (name) => ({ name, seq: 1 }))
        await sameWords('diff', (name) => ({ name, from: 0 }))
        await sameWords('blame', (name) => ({ name }))
        await sameWords('register_set', (name) => ({ name, value: 'tampered' }))
        await sameWords('counter_add', (name) => ({ name, amount: 1 }))
        await sameWords('revert', (name) => ({ name, seq: 0 }))
        await sameWords('presence', (name) => ({ action: 'set', status: 'x', name }))
        assert.equal((await peer.register('secret/plan')).value(), 'classified')
        assert.equal(await peer.store.typeOf('secret/absent'), undefined)
        const resources = (await eve.client.listResources()).resources.map((r) => r.name)
        assert.deepEqual(resources, ['public/count', 'ro/plan'])
        await assert.rejects(eve.client.readResource({ uri: 'concord://name/secret%2Fplan' }), /CONCORD_NOT_FOUND: no such name "secret\/plan"/)
        await assert.rejects(eve.client.subscribeResource({ uri: 'concord://name/secret%2Fplan' }), /CONCORD_NOT_FOUND/)
        peer.presence.set('spy', { status: 'on the secret plan', name: 'secret/plan', ttlMs: 60_000 })
        peer.presence.set('open', { status: 'idle', ttlMs: 60_000 })
        assert.deepEqual(
          (await eve.ok('presence', {})).agents.map((a: { agent: string }) => a.agent),
          ['open'],
        )

        // rita may only read ro/*: reads work, every write is refused as a session write is.
        assert.equal((await rita.ok('read', { name: 'ro/plan' })).text, 'visible', 'a string comes as text')
        const write = await rita.call('register_set', { name: 'ro/plan', value: 'changed' })
        assert.equal(write.body.error.code, 'CONCORD_FORBIDDEN')
        assert.equal(write.body.error.message, 'peer "rita" may not write "ro/plan"')
        assert.equal((await rita.call('register_set', { name: 'ro/new', value: 1 })).body.error.code, 'CONCORD_NOT_FOUND', 'a reader does not create names')
        assert.equal((await rita.call('revert', { name: 'ro/plan', seq: 0 })).body.error.code, 'CONCORD_FORBIDDEN')
        assert.equal((await peer.register('ro/plan')).value(), 'visible')
      } finally {
        await eve.close()
        await rita.close()
      }
    },
    {
      auth: { trustClaimedIds: true },
      access: (agentId, name) => (name.startsWith('secret/') ? 'none' : name.startsWith('ro/') && agentId === 'rita' ? 'read' : 'write'),
    },
  ))

test('resources: names listed as concord:// URIs, read as JSON with a version; subscriptions notify changes from any writer; prompts', () =>
  withPeer(async (peer) => {
    const [ana] = await clients(peer, 'ana')
    try {
      await ana.ok('text_insert', { name: 'team notes', index: 0, text: 'draft' })
      const { resources } = await ana.client.listResources()
      assert.deepEqual(
        resources.map((r) => r.uri),
        ['concord://name/team%20notes'],
      )
      const { resourceTemplates } = await ana.client.listResourceTemplates()
      assert.equal(resourceTemplates[0].uriTemplate, 'concord://name/{name}')
      const body = JSON.parse(((await ana.client.readResource({ uri: 'concord://name/team%20notes' })).contents[0] as { text: string }).text)
      assert.deepEqual({ name: body.name, type: body.type, value: body.value }, { name: 'team notes', type: 'yjs', value: { text: 'draft' } })
      await ana.client.subscribeResource({ uri: 'concord://name/team%20notes' })
      ;(await peer.yjs('team notes')).doc.getText('text').insert(0, 'a change by the peer itself: ')
      await waitFor(() => ana.updates.includes('concord://name/team%20notes'), 'the update notification')
      await ana.client.unsubscribeResource({ uri: 'concord://name/team%20notes' })
      let listChanged = 0
      ana.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
        listChanged++
      })
      await ana.ok('counter_add', { name: 'a new name', amount: 1 })
      await waitFor(() => listChanged > 0, 'list_changed for a new name')
      await assert.rejects(ana.client.readResource({ uri: 'https://example.org' }), /CONCORD_INVALID_ARGUMENT/)

      const { prompts } = await ana.client.listPrompts()
      assert.deepEqual(
        prompts.map((p) => p.name),
        ['coordinate_task', 'review_changes'],
      )
      const prompt = await ana.client.getPrompt({ name: 'coordinate_task', arguments: { task: 'sources' } })
      const text = (prompt.messages[0].content as { text: string }).text
      assert.match(text, /set_add to "claims" the element "sources@ana"/)
      assert.match(text, /ifVersion/)
      await assert.rejects(ana.client.getPrompt({ name: 'coordinate_task', arguments: {} }), /CONCORD_INVALID_ARGUMENT/)
    } finally {
      await ana.close()
    }
  }))

async function waitFor(predicate: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
