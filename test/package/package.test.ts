/**
 * The packaging test: `npm pack` this repository (built first), install the
 * tarball into a fresh project outside it (dependencies from the npm
 * registry), then use it the way a user does, with nothing of this
 * repository on the way (no tsx, no shim, no source file):
 * (a) a plain .mjs program opens two peers with LevelDB folders and syncs
 *     them over WebSocket, then over libp2p;
 * (b) a TypeScript consumer (tsc --init settings, module nodenext, Node
 *     types) type-checks the README's API, the public types and every
 *     subpath, with and without skipLibCheck;
 * (c) the `concord` bin: --help through npx, --version, import
 *     --from-y-leveldb (and its error without y-leveldb), inspect;
 * (d) concord-crdt/testing's storage suite under node --test;
 * (e) the same program and bin under Node 24 (see helpers.ts).
 * One install serves every check.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { assertOk, cleanEnv, node24, run, NODE_24 } from './helpers.ts'
import { bundleForBrowser } from '../browser/browser-bundle.ts'
import { browserSkipReason, launchChromium } from '../browser/chromium.ts'

const repo = fileURLToPath(new URL('../../', import.meta.url))
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const manifest = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as {
  version: string
  exports: Record<string, string | Record<string, string>>
  bin: Record<string, string>
  devDependencies: Record<string, string>
}
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc')

let work = ''
let project = ''
let installLog = ''
let packedFiles: string[] = []

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'concord-package-'))
  project = join(work, 'project')
  assertOk(await run('npm', ['run', 'build'], { cwd: repo }), 'npm run build')
  const packed = assertOk(await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: repo }), 'npm pack')
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  packedFiles = info.files.map((file) => file.path)
  await rm(project, { recursive: true, force: true })
  await mkdir(project)
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  const extras = ['y-leveldb', 'fast-check', '@types/node'].map((name) => `${name}@${manifest.devDependencies[name]}`)
  const install = assertOk(
    await run('npm', ['install', '--no-audit', '--no-fund', join(work, info.filename), ...extras], { cwd: project, timeoutMs: 300_000 }),
    'npm install of the tarball',
  )
  installLog = install.stdout + install.stderr
  for (const file of ['two-peers.mjs', 'y-leveldb-source.mjs', 'storage-suite.test.mjs', 'consumer.ts', 'inspector-hub.mjs'])
    await copyFile(join(fixtures, file), join(project, file))
})

after(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

const bin = (): string => join(project, 'node_modules', '.bin', 'concord')

test('the tarball holds the compiled package and nothing else; every export and the bin are in it', () => {
  const allowed = /^(dist\/.+\.(js|js\.map|d\.ts)|package\.json|README\.md|LICENSE|CHANGELOG\.md)$/
  assert.deepEqual(
    packedFiles.filter((path) => !allowed.test(path)),
    [],
  )
  for (const required of ['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']) assert.ok(packedFiles.includes(required), required)
  const targets = Object.values(manifest.exports).flatMap((target) => (typeof target === 'string' ? [target] : Object.values(target)))
  for (const target of [...targets, ...Object.values(manifest.bin)]) assert.ok(packedFiles.includes(target.replace(/^\.\//, '')), `${target} is packed`)
  const tops = new Set(packedFiles.filter((path) => path.startsWith('dist/')).map((path) => path.split('/')[1].replace(/\.(js|js\.map|d\.ts)$/, '')))
  assert.deepEqual(
    [...tops].sort(),
    ['browser', 'cli', 'crdt', 'index', 'inspector', 'mcp', 'peer', 'persistence', 'sync', 'testing', 'transports'],
    'no test, bench or demo file',
  )
})

test('the install on this Node warns about no engine; tsx (a devDependency) is not installed', () => {
  assert.doesNotMatch(installLog, /EBADENGINE/)
  assert.equal(existsSync(join(project, 'node_modules', 'tsx')), false)
})

/** Runs two-peers.mjs with `node` and checks what converged. */
async function twoPeers(node: string): Promise<void> {
  const data = await mkdtemp(join(work, 'peers-'))
  const result = assertOk(await run(node, ['two-peers.mjs', data], { cwd: project }), `${node} two-peers.mjs`)
  const report = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as {
    websocket: { tasks: number; seen: string[]; notes: string[]; spec: string[] }
    libp2p: { tasks: number; seen: string[]; notes: string[]; spec: string[] }
    libp2pPeers: number
  }
  assert.deepEqual(report.websocket, {
    tasks: 2,
    seen: ['ws-alice', 'ws-bob'],
    notes: ['ws:alice', 'ws:bob'],
    spec: ['ws-alice', 'ws-bob'],
  })
  assert.deepEqual(report.libp2p, {
    tasks: 4,
    seen: ['p2p-alice', 'p2p-bob', 'ws-alice', 'ws-bob'],
    notes: ['p2p:alice', 'p2p:bob', 'ws:alice', 'ws:bob'],
    spec: ['p2p-alice', 'p2p-bob', 'ws-alice', 'ws-bob'],
  })
  assert.ok(report.libp2pPeers >= 1, 'the second round went over a libp2p connection')
}

test('(a) a plain .mjs program syncs two LevelDB peers over WebSocket, then over libp2p', async () => {
  await twoPeers(process.execPath)
})

test('(b) a TypeScript consumer (tsc --init, module nodenext) type-checks the README API, the types and every subpath', async () => {
  assertOk(await run(process.execPath, [tsc, '--init'], { cwd: project }), 'tsc --init')
  const config = await readFile(join(project, 'tsconfig.json'), 'utf8')
  assert.match(config, /"module": "nodenext"/, 'tsc --init chose module nodenext')
  assert.match(config, /"types": \[\]/)
  // tsc --init's own advice for Node: "types": ["node"] and @types/node.
  await writeFile(join(project, 'tsconfig.json'), config.replace('"types": [],', '"types": ["node"],'))
  assertOk(await run(process.execPath, [tsc, '--noEmit', '-p', '.'], { cwd: project }), 'tsc (skipLibCheck as tsc --init sets it)')
  assertOk(await run(process.execPath, [tsc, '--noEmit', '-p', '.', '--skipLibCheck', 'false'], { cwd: project }), 'tsc --skipLibCheck false')
})

test('(c) the concord bin runs compiled JavaScript from the installed package', async () => {
  const help = assertOk(await run('npx', ['concord', '--help'], { cwd: project }), 'npx concord --help')
  assert.match(help.stdout, /Usage: concord/)
  const version = assertOk(await run(bin(), ['--version'], { cwd: project }), 'concord --version')
  assert.equal(version.stdout.trim(), manifest.version)

  const source = join(work, 'y-leveldb-db')
  const target = join(work, 'imported')
  assertOk(await run(process.execPath, ['y-leveldb-source.mjs', source], { cwd: project }), 'writing a y-leveldb database')
  const imported = assertOk(
    await run(bin(), ['import', '--dir', target, '--from-y-leveldb', source, '--json'], { cwd: project }),
    'concord import --from-y-leveldb',
  )
  const report = JSON.parse(imported.stdout) as { ok: boolean; documents: Array<{ name: string; verified: boolean }> }
  assert.equal(report.ok, true, imported.stdout)
  assert.deepEqual(report.documents.map((d) => [d.name, d.verified]).sort(), [
    ['readme', true],
    ['todo', true],
  ])

  const inspect = assertOk(await run(bin(), ['inspect', '--dir', target, '--json'], { cwd: project }), 'concord inspect')
  const names = (JSON.parse(inspect.stdout) as { names: Array<{ name: string; type: string }> }).names
  assert.deepEqual(names.map((n) => [n.name, n.type]).sort(), [
    ['readme', 'yjs'],
    ['todo', 'yjs'],
  ])
  const value = assertOk(await run(bin(), ['inspect', '--dir', target, 'readme', '--json'], { cwd: project }), 'concord inspect NAME')
  assert.match(value.stdout, /hello from y-leveldb/)

  // y-leveldb is an optional peer dependency: without it the import says what to install.
  const installed = join(project, 'node_modules', 'y-leveldb')
  await rename(installed, `${installed}.away`)
  try {
    const missing = await run(bin(), ['import', '--dir', join(work, 'imported-2'), '--from-y-leveldb', source], { cwd: project })
    assert.equal(missing.code, 1, missing.stderr)
    assert.match(missing.stderr, /needs the y-leveldb package .*npm i y-leveldb@/)
  } finally {
    await rename(`${installed}.away`, installed)
  }
})

test('(d) concord-crdt/testing: the storage conformance suite runs under node --test from the installed package', async () => {
  const result = assertOk(
    await run(process.execPath, ['--test', '--test-reporter=tap', 'storage-suite.test.mjs'], { cwd: project }),
    'node --test storage-suite.test.mjs',
  )
  assert.match(result.stdout, /storage conformance: memory-level from the installed package/)
  assert.match(result.stdout, /^# fail 0$/m)
  assert.doesNotMatch(result.stdout, /^# pass 0$/m)
})

test(`(e) under Node ${NODE_24}: the same program syncs over WebSocket and libp2p, and the bin runs`, async (t) => {
  const node = await node24(repo)
  if (!node) return t.skip(`no node-${process.platform}-${process.arch} package for Node ${NODE_24}`)
  const reported = assertOk(await run(node, ['--version'], { cwd: project }), 'node --version')
  assert.equal(reported.stdout.trim(), `v${NODE_24}`)
  await twoPeers(node)
  // The bin's `#!/usr/bin/env node` finds Node 24 first on the PATH.
  const env = cleanEnv({ PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` })
  const help = assertOk(await run(bin(), ['--help'], { cwd: project, env }), 'concord --help under Node 24')
  assert.match(help.stdout, /Usage: concord/)
  const suite = assertOk(await run(node, ['--test', '--test-reporter=tap', 'storage-suite.test.mjs'], { cwd: project, env }), 'node --test under Node 24')
  assert.match(suite.stdout, /^# fail 0$/m)
})

test("concord-crdt/browser from the installed package bundles for the browser with no Node built-in (the package's browser field works on dist/)", async () => {
  const bundle = await bundleForBrowser("export * from 'concord-crdt/browser'", { resolveDir: project })
  assert.deepEqual(bundle.nodeImports, [], 'no node:* module, Node built-in or Node-only package in the graph')
  assert.deepEqual(
    bundle.polyfills.map((line) => line.split(' ')[0]).sort(),
    ['buffer', 'events'],
    'events and buffer come from their npm packages, installed with concord-crdt',
  )
  const installed = (file: string) => bundle.inputs.some((input) => input.endsWith(`node_modules/concord-crdt/dist/${file}`))
  assert.ok(installed('persistence/browser/digest.js') && !installed('persistence/format/digest.js'), 'the browser digests replace the Node ones')
  assert.ok(
    installed('persistence/browser/open-level-storage.js') && !installed('persistence/storage/level/open-level-storage.js'),
    'the IndexedDB opener replaces the LevelDB one',
  )
  assert.ok(
    bundle.inputs.some((input) => input.endsWith('@automerge/automerge/dist/mjs/entrypoints/slim.js')),
    'Automerge comes in as its slim entry',
  )
})

test('(f) the installed package serves the inspector: its built bundle, and the page runs in Chromium against a peer of the package', async (t) => {
  const { spawn } = await import('node:child_process')
  const child = spawn(process.execPath, ['inspector-hub.mjs'], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk) => {
    out += chunk
  })
  child.stderr.on('data', (chunk) => {
    err += chunk
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    const deadline = Date.now() + 30_000
    while (!out.includes('\n')) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`inspector-hub.mjs did not start: ${err}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const { origin } = JSON.parse(out.split('\n')[0]) as { origin: string }
    const served = new Uint8Array(await (await fetch(`${origin}/ui/inspector.js`)).arrayBuffer())
    const built = new Uint8Array(await readFile(join(project, 'node_modules', 'concord-crdt', 'dist', 'inspector', 'assets', 'inspector.js')))
    assert.ok(built.byteLength > 10_000)
    assert.deepEqual(served, built, 'the bundle npm run build wrote')
    assert.equal((await fetch(`${origin}/ui/automerge.wasm`)).headers.get('content-type'), 'application/wasm')
    const skip = browserSkipReason()
    if (skip) return t.skip(skip)
    const profile = await mkdtemp(join(work, 'chromium-'))
    const browser = await launchChromium(profile)
    try {
      const page = await browser.newPage()
      const errors: string[] = []
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warn') errors.push(message.text())
      })
      page.on('pageerror', (error) => errors.push(String(error)))
      await page.goto(`${origin}/ui`, { waitUntil: 'load' })
      await page.waitForSelector('#connection.ok', { timeout: 20_000 })
      await page.waitForSelector('#names li[data-name="visits"]', { timeout: 20_000 })
      // Found and clicked in one step: the page re-renders its names list as polls come.
      await page.$eval('#names li[data-name="visits"]', (el) => (el as any).click())
      await page.waitForFunction(() => ((globalThis as any).document.querySelector('#value')?.textContent ?? '').trim() === '3', { timeout: 20_000 })
      assert.deepEqual(errors, [])
    } finally {
      await browser.close()
    }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
})
