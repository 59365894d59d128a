/**
 * `concord-crdt/browser` builds for the browser with no Node built-in: esbuild
 * (platform `browser`) bundles the entry, and the build's import graph is
 * checked (test/browser/browser-bundle.ts). The graph really holds crdt/
 * and sync/ (the design's promise that they run in a browser; the Chromium
 * tests run them), the browser's stand-ins replace the Node-only modules,
 * and the guard itself is checked on the Node entry, which must fail it.
 * Sizes (minified, gzipped) are printed beside Yjs + y-websocket's, built
 * the same way (also `npm run bench -- --filter browser/`).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { bundleForBrowser } from './browser-bundle.ts'

const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`

test('concord-crdt/browser bundles for the browser with no Node built-in, module or global; crdt/ and sync/ are in it', async (t) => {
  const bundle = await bundleForBrowser("export * from './browser.ts'")
  assert.deepEqual(bundle.nodeImports, [], 'no node:* module, Node built-in or Node-only package in the import graph')
  assert.deepEqual(bundle.nodeGlobals, [], 'no Node global (process, Buffer, setImmediate, require, ...) in our modules of the graph')
  // abstract-level requires `events` and `buffer`: the npm packages of those names are their browser implementations.
  assert.deepEqual(bundle.polyfills.map((line) => line.split(' ')[0]).sort(), ['buffer', 'events'])
  const has = (file: string) => bundle.inputs.includes(file)
  for (const file of [
    'crdt/registry.ts',
    'crdt/causal/causal-context.ts',
    'crdt/documents/yjs-guard.ts',
    'crdt/documents/automerge-replica.ts',
    'sync/session.ts',
    'sync/admission.ts',
    'sync/anti-entropy.ts',
    'sync/credentials.ts',
    'persistence/store.ts',
    'persistence/pipeline/committer.ts',
  ]) {
    assert.ok(has(file), `${file} is part of the browser build`)
  }
  // The package's `browser` field swaps the Node-only modules below the peer for the browser's.
  for (const [node, browser] of [
    ['persistence/format/digest.ts', 'persistence/browser/digest.ts'],
    ['persistence/format/ed25519.ts', 'persistence/browser/ed25519.ts'],
    ['persistence/lifecycle/archive-files.ts', 'persistence/browser/archive-files.ts'],
    ['persistence/lifecycle/seal-files.ts', 'persistence/browser/seal-files.ts'],
    ['persistence/storage/level/open-level-storage.ts', 'persistence/browser/open-level-storage.ts'],
    ['persistence/storage/level/space-probe.ts', 'persistence/browser/space-probe.ts'],
    ['persistence/automerge-reload.ts', 'persistence/browser/automerge-reload.ts'],
  ]) {
    assert.ok(!has(node) && has(browser), `${browser} replaces ${node}`)
  }
  assert.ok(
    bundle.inputs.some((file) => file.endsWith('@automerge/automerge/dist/mjs/entrypoints/slim.js')),
    'Automerge comes in as its slim entry',
  )
  assert.ok(
    !bundle.inputs.some((file) => file.endsWith('.wasm') || file.includes('fullfat') || file.includes('wasm_bg_base64')),
    "Automerge's wasm is not bundled",
  )
  assert.ok(
    !bundle.inputs.some((file) =>
      /^(peer\/(peer|websocket-network|libp2p-link|y-websocket-route|open-access)\.ts|transports\/(websocket\/transport|libp2p\/))/.test(file),
    ),
    'no Node door (listen, y-websocket, libp2p) is in the browser build',
  )
  // A budget, not a benchmark: the build is deterministic, and the wasm or libp2p slipping in would triple it.
  assert.ok(bundle.gzipBytes < 200 * 1024, `concord-crdt/browser is ${kib(bundle.gzipBytes)} gzipped, over its 200 KiB budget`)
  const yjs = await bundleForBrowser("export * from 'yjs'; export { WebsocketProvider } from 'y-websocket'")
  t.diagnostic(
    `concord-crdt/browser: ${kib(bundle.bytes)} minified, ${kib(bundle.gzipBytes)} gzipped; Yjs + y-websocket: ${kib(yjs.bytes)} minified, ${kib(yjs.gzipBytes)} gzipped ` +
      `(${(bundle.gzipBytes / yjs.gzipBytes).toFixed(2)}x); Automerge's wasm, loaded on demand: 3.6 MB`,
  )
  t.diagnostic(
    `largest parts (minified bytes): ${bundle.breakdown
      .slice(0, 8)
      .map((p) => `${p.part} ${kib(p.bytes)}`)
      .join(', ')}`,
  )
})

test('the guard fails the Node entry: node:* modules, Node-only packages and Node globals are reported with who imports them', async () => {
  const bundle = await bundleForBrowser("export * from './index.ts'")
  assert.ok(bundle.nodeImports.includes('ws <- transports/websocket/transport.ts'), bundle.nodeImports.join('\n'))
  assert.ok(bundle.nodeImports.includes('node:net <- peer/open-access.ts'), bundle.nodeImports.join('\n'))
  assert.ok(bundle.nodeImports.includes('@libp2p/tcp <- transports/libp2p/libp2p-node.ts'), bundle.nodeImports.join('\n'))
  assert.ok(bundle.nodeGlobals.includes('transports/websocket/connection.ts: Buffer'), bundle.nodeGlobals.join('\n'))
  // A bare built-in name no npm package provides is reported too.
  const bare = await bundleForBrowser("import { readFileSync } from 'fs'; export const read = readFileSync")
  assert.deepEqual(bare.nodeImports, ['fs <- entry.ts'])
})
