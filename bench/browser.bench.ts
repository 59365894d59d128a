/**
 * The size of the browser build: `concord-crdt/browser` bundled by esbuild for
 * the browser (minified, gzipped) beside Yjs + y-websocket bundled the same
 * way. Concord's build also holds its IndexedDB store (abstract-level,
 * browser-level, memory-level, and their `buffer` and `events`), the native
 * CRDTs, the sync protocol and Automerge's JavaScript; Automerge's 3.6 MB
 * wasm is loaded on demand, not bundled. The inspector page's bundle
 * (concord-crdt/browser, the page and the shared charts; served at `/ui`) is
 * measured beside them.
 */
import type { Benchmark } from './harness.ts'
import { bundleForBrowser } from '../test/browser/browser-bundle.ts'

export const benchmarks: Benchmark[] = [
  {
    name: 'browser/bundle-size',
    async run() {
      const concord = await bundleForBrowser("export * from './browser.ts'")
      const yjs = await bundleForBrowser("export * from 'yjs'; export { WebsocketProvider } from 'y-websocket'")
      const inspector = await bundleForBrowser("import './inspector/page/main.ts'")
      const top = concord.breakdown
        .slice(0, 6)
        .map((part) => `${part.part} ${(part.bytes / 1024).toFixed(0)} KiB`)
        .join(', ')
      return [
        {
          name: 'concord-crdt/browser, minified',
          value: concord.bytes,
          unit: 'bytes',
          better: 'lower',
          baseline: { label: 'Yjs + y-websocket', value: yjs.bytes },
          note: `largest parts: ${top}`,
        },
        {
          name: 'concord-crdt/browser, minified + gzip -9',
          value: concord.gzipBytes,
          unit: 'bytes',
          better: 'lower',
          baseline: { label: 'Yjs + y-websocket', value: yjs.gzipBytes },
        },
        {
          name: 'inspector page (concord-crdt/browser + its UI), minified + gzip -9',
          value: inspector.gzipBytes,
          unit: 'bytes',
          better: 'lower',
          baseline: { label: 'concord-crdt/browser', value: concord.gzipBytes },
          note: `${(inspector.bytes / 1024).toFixed(0)} KiB minified`,
        },
      ]
    },
  },
]
