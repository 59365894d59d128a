/**
 * The inspector's route and read-only API over real sockets (a peer with a
 * LevelDB folder, `listen({ ui: true })`), and `concord serve --ui` as a
 * child process: the page and its assets, credentials, access per name,
 * history / at / diff / blame answers, bad input (a typed 400, never a
 * crash), read-only methods, and the page's bundle for browsers (no Node
 * import in its graph). The page itself runs in Chromium in
 * test/browser/inspector.test.ts.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createPeer } from '../../peer/index.ts'
import { bundleForBrowser } from '../browser/browser-bundle.ts'
import { spawnConcord } from '../cli/helpers.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

const SECRETS = { ana: 'ana-secret', viewer: 'viewer-secret', outsider: 'outsider-secret' }

test('inspector route: page and assets, credentials, names by access, history, at, diff, blame, bad input', async () => {
  const dir = await tempDir()
  const hub = await createPeer({
    agentId: 'hub',
    dir: join(dir.path, 'hub'),
    auth: { accept: SECRETS },
    access: (peer, name) => (peer === 'outsider' && name.startsWith('secret/') ? 'none' : peer === 'ana' ? 'write' : 'read'),
  })
  try {
    const { port } = await hub.listen({ ui: true })
    const base = `http://127.0.0.1:${port}/ui`
    const notes = await hub.yjs('notes')
    notes.doc.getText('t').insert(0, 'hello')
    notes.doc.getText('t').insert(5, ' world')
    const clicks = await hub.counter('clicks')
    clicks.increment(2)
    ;(await hub.register('secret/plan')).set('x')
    await hub.store.flush()
    const as = (agent: keyof typeof SECRETS) => ({ headers: { authorization: `Bearer ${SECRETS[agent]}`, 'x-concord-peer': agent } })
    const get = async (path: string, agent: keyof typeof SECRETS = 'viewer') => {
      const response = await fetch(`${base}${path}`, as(agent))
      return { status: response.status, body: (await response.json()) as any }
    }

    // The page and its files need no credentials (they hold no data); the page allows only this peer.
    const page = await fetch(base)
    assert.equal(page.status, 200)
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'.*connect-src 'self'/)
    assert.match(await page.text(), /<script type="module" src="\/ui\/inspector.js">/)
    const script = await fetch(`${base}/inspector.js`)
    assert.equal(script.status, 200)
    assert.match(script.headers.get('content-type') ?? '', /javascript/)
    assert.ok((await script.arrayBuffer()).byteLength > 10_000)
    const wasm = await fetch(`${base}/automerge.wasm`)
    assert.equal(wasm.headers.get('content-type'), 'application/wasm')
    assert.equal((await fetch(`${base}/nothing.js`)).status, 404)
    assert.equal((await fetch(`${base}/inspector.css`, { method: 'HEAD' })).status, 200)

    // Credentials: none, wrong, or the serving peer's own id are refused.
    assert.equal((await fetch(`${base}/api/status`)).status, 401)
    assert.equal((await fetch(`${base}/api/status`, { headers: { authorization: 'Bearer nope', 'x-concord-peer': 'viewer' } })).status, 401)
    assert.equal((await fetch(`${base}/api/status`, { headers: { authorization: `Bearer ${SECRETS.viewer}`, 'x-concord-peer': 'hub' } })).status, 401)
    const status = await get('/api/status')
    assert.equal(status.status, 200)
    assert.equal(status.body.agentId, 'hub')
    assert.equal(status.body.agent, 'viewer')
    assert.equal(status.body.durability.mode, 'sync')

    // Names by access: the outsider's list lacks secret/plan, and asking for it is answered as for an absent name.
    const listed = (agent: keyof typeof SECRETS) => get('/api/names', agent).then((r) => r.body.names.map((n: { name: string }) => n.name))
    assert.deepEqual(await listed('viewer'), ['clicks', 'notes', 'secret/plan'])
    assert.deepEqual(await listed('outsider'), ['clicks', 'notes'])
    const names = (await get('/api/names')).body.names
    assert.equal(names.find((n: { name: string }) => n.name === 'notes').lastAgent, 'hub')
    await hub.transact(() => clicks.increment(), { agent: 'ana' })
    const after = (await get('/api/names')).body.names
    assert.equal(after.find((n: { name: string }) => n.name === 'clicks').lastAgent, 'ana', 'a newer record: its writer, not the one listed before')
    assert.equal(after.find((n: { name: string }) => n.name === 'notes').lastAgent, 'hub')
    for (const endpoint of ['history', 'blame', 'at', 'diff']) {
      const hidden = await get(`/api/${endpoint}?name=secret%2Fplan&seq=1&from=0&to=1`, 'outsider')
      const absent = await get(`/api/${endpoint}?name=secret%2Fnone&seq=1&from=0&to=1`, 'outsider')
      assert.equal(hidden.status, 404, endpoint)
      assert.deepEqual(hidden.body, absent.body, endpoint)
    }

    // History, value at a point, diff between two, blame.
    const history = await get('/api/history?name=notes')
    assert.equal(history.status, 200)
    assert.deepEqual(
      history.body.records.map((r: { seq: number; agent: string }) => [r.seq, r.agent]),
      [
        [1, 'hub'],
        [2, 'hub'],
      ],
    )
    assert.ok(history.body.records.every((r: { wall: number; size: number }) => r.wall > 0 && r.size > 0))
    assert.deepEqual((await get('/api/history?name=notes&limit=1')).body.records.length, 1)
    assert.deepEqual((await get('/api/at?name=notes&seq=1')).body.value, { t: 'hello' })
    assert.deepEqual((await get('/api/at?name=clicks&seq=1')).body.value, 2)
    assert.deepEqual((await get('/api/at?name=clicks&seq=2')).body.value, 3)
    const diff = await get('/api/diff?name=notes&from=1&to=2')
    assert.equal(diff.body.changes.kind, 'document')
    assert.deepEqual(diff.body.changes.fields[0].spans, [{ op: 'insert', at: 5, text: ' world' }])
    const blame = await get('/api/blame?name=notes')
    assert.equal(blame.body.blame.kind, 'text')
    assert.deepEqual(
      blame.body.blame.spans.map((s: { text: string; agent: string }) => [s.text, s.agent]),
      [
        ['hello', 'hub'],
        [' world', 'hub'],
      ],
    )

    // Bad input: typed 400s and 404s, the peer keeps serving.
    for (const query of [
      '/api/at?name=notes',
      '/api/at?name=notes&seq=-1',
      '/api/at?name=notes&seq=1e3',
      '/api/diff?name=notes&from=1',
      '/api/history?name=notes&limit=0',
    ]) {
      const bad = await get(query)
      assert.equal(bad.status, 400, query)
      assert.equal(bad.body.error.code, 'CONCORD_INVALID_ARGUMENT', query)
    }
    assert.equal((await get('/api/at?name=notes&seq=99')).status < 500, true)
    assert.equal((await get('/api/nothing')).status, 404)
    assert.equal((await get(`/api/history?name=${'x'.repeat(5000)}`)).status, 404)
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) assert.equal((await fetch(`${base}/api/names`, { method, ...as('ana') })).status, 405, method)
    assert.equal((await fetch(`${base}/api/status`, { headers: { ...as('viewer').headers, origin: 'http://evil.example' } })).status, 403)
    assert.equal((await fetch(`${base}/api/status`, { headers: { ...as('viewer').headers, origin: `http://127.0.0.1:${port}` } })).status, 200)
    assert.equal((await get('/api/status')).status, 200)
  } finally {
    await hub.close()
    await dir.remove()
  }
})

test('inspector route: an open peer (no credentials) answers anyone; the route is off unless asked for', async () => {
  const open = await createPeer({ agentId: 'open' })
  const plain = await createPeer({ agentId: 'plain' })
  try {
    const { port } = await open.listen({ ui: { path: '/inspect' } })
    ;(await open.counter('c')).increment()
    const status = await fetch(`http://127.0.0.1:${port}/inspect/api/names`)
    assert.equal(status.status, 200)
    assert.deepEqual(
      ((await status.json()) as { names: Array<{ name: string }> }).names.map((n) => n.name),
      ['c'],
    )
    const { port: other } = await plain.listen()
    assert.notEqual((await fetch(`http://127.0.0.1:${other}/ui`)).status, 200)
  } finally {
    await open.close()
    await plain.close()
  }
})

test('concord serve --ui: prints the inspector address and serves the page and the API with the --acl tokens', async () => {
  const dir = await tempDir()
  const acl = join(dir.path, 'acl.json')
  await writeFile(acl, JSON.stringify({ tokens: { viewer: 'viewer-secret' }, default: 'read' }))
  const child = spawnConcord(['serve', '--dir', join(dir.path, 'hub'), '--port', '0', '--json', '--id', 'hub', '--acl', acl, '--ui'])
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk) => {
    out += chunk
  })
  child.stderr!.on('data', (chunk) => {
    err += chunk
  })
  const exit = once(child, 'exit')
  try {
    await until(() => out.includes('\n'), `serve prints its address (${err})`, 30_000)
    const info = JSON.parse(out.split('\n')[0]) as { ui: string }
    assert.match(info.ui, /^http:\/\/127\.0\.0\.1:\d+\/ui$/)
    assert.equal((await fetch(info.ui)).status, 200)
    assert.equal((await fetch(`${info.ui}/inspector.js`)).status, 200)
    const status = await fetch(`${info.ui}/api/status`, { headers: { authorization: 'Bearer viewer-secret', 'x-concord-peer': 'viewer' } })
    assert.equal(status.status, 200)
    assert.equal(((await status.json()) as { agentId: string }).agentId, 'hub')
  } finally {
    child.kill('SIGTERM')
    await exit
    await dir.remove()
  }
})

test('the inspector page bundles for browsers with no Node import (concord-crdt/browser, the charts, the page)', async () => {
  const bundle = await bundleForBrowser("import './inspector/page/main.ts'")
  assert.deepEqual(bundle.nodeImports, [])
  assert.deepEqual(bundle.nodeGlobals, [])
  assert.ok(bundle.inputs.includes('browser.ts') && bundle.inputs.includes('inspector/charts.ts'))
  console.log(`# inspector page: ${(bundle.bytes / 1024).toFixed(0)} KiB minified, ${(bundle.gzipBytes / 1024).toFixed(0)} KiB gzipped`)
})
