// The inspector page's bundle (inspector/page/main.ts, a concord/browser
// peer with its UI) for the browser, with esbuild: minified ESM, no source
// map. `npm run build` writes it to dist/inspector/assets/inspector.js;
// run from the repository, inspector/assets.ts builds it in memory on
// first request instead.
import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Bundles the page; writes `outfile` when given. Resolves with the bundle's bytes. */
export async function buildInspectorPage({ outfile, minify = true } = {}) {
  const esbuild = await import('esbuild')
  const result = await esbuild.build({
    entryPoints: [join(root, 'inspector', 'page', 'main.ts')],
    absWorkingDir: root,
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    minify,
    legalComments: 'none',
    write: outfile !== undefined,
    outfile,
    logLevel: 'silent',
  })
  return outfile !== undefined ? new Uint8Array(readFileSync(outfile)) : result.outputFiles[0].contents
}
