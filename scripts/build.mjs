#!/usr/bin/env node
// npm run build: compiles the package to dist/ with tsconfig.build.json
// (JavaScript, declarations, source maps with their sources inlined), then
// checks what consumers will resolve:
// - relative imports in the JavaScript end in .js (tsc's
//   rewriteRelativeImportExtensions rewrites them);
// - relative imports in the declarations are rewritten from .ts to .js here
//   (tsc leaves them as written; TypeScript 5 and 7 resolve either, older
//   TypeScript and other .d.ts readers only .js);
// - the bin is executable;
// and bundles the inspector page for browsers (scripts/build-inspector.mjs)
// into dist/inspector/assets/inspector.js, which `listen({ ui: true })` serves.
import { spawnSync } from 'node:child_process'
import { chmodSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const dist = join(root, 'dist')
rmSync(dist, { recursive: true, force: true })
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc')
const run = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })
if (run.status !== 0) process.exit(run.status ?? 1)

function walk(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const full = join(dir, entry)
    return statSync(full).isDirectory() ? walk(full) : [full]
  })
}

/** A relative module specifier ending in .ts, in `from '...'`, `import '...'` or `import('...')`. */
const relativeTs = /((?:\bfrom|\bimport|\bdeclare module)\s*\(?\s*)(['"])(\.\.?\/[^'"]*?)\.ts\2/g
const problems = []
for (const file of walk(dist)) {
  if (file.endsWith('.d.ts')) {
    const source = readFileSync(file, 'utf8')
    const rewritten = source.replace(relativeTs, (_match, head, quote, path) => `${head}${quote}${path}.js${quote}`)
    if (rewritten !== source) writeFileSync(file, rewritten)
  } else if (file.endsWith('.js')) {
    const code = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '')
    for (const match of code.matchAll(relativeTs)) problems.push(`${relative(root, file)}: imports ${match[3]}.ts`)
  }
}
if (problems.length > 0) {
  console.error(`build: relative .ts imports left in the JavaScript:\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
chmodSync(join(dist, 'cli', 'main.js'), 0o755)
const { buildInspectorPage } = await import('./build-inspector.mjs')
const page = await buildInspectorPage({ outfile: join(dist, 'inspector', 'assets', 'inspector.js') })
console.log(`build: inspector page ${(page.byteLength / 1024).toFixed(0)} KiB`)
console.log(`build: ${relative(process.cwd(), dist) || 'dist'} ok`)
