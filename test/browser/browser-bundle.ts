/**
 * Builds a browser bundle with esbuild (platform `browser`, ESM), the way a
 * web app's bundler would, and checks its import graph: a Node built-in
 * (`node:*`, or a bare `fs`, `net`, ... that no npm package provides) or a
 * Node-only package (`ws`, `classic-level`, libp2p, ...) fails the build and
 * names who imported it; a built-in name that an installed npm package
 * provides (`events`, `buffer`: their browser implementations) is allowed and
 * listed. Our own modules in the graph are also checked for Node globals
 * (`process`, `Buffer`, `setImmediate`, `__dirname`, `require`) in their
 * compiled JavaScript (types and comments gone), since those compile fine
 * and fail only when run.
 */
import { builtinModules } from 'node:module'
import { readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import * as esbuild from 'esbuild'

/** The repository root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** Packages that only run in Node (their browser stubs, where they ship one, throw at run time). */
const NODE_ONLY_PACKAGES = [/^ws$/, /^classic-level$/, /^level$/, /^libp2p$/, /^@libp2p\//, /^@chainsafe\//, /^commander$/, /^cli-progress$/, /^y-leveldb$/]
/** Globals a browser does not have; esbuild's `define` replaces only free references to them (not locals, parameters or properties). */
const NODE_GLOBALS = ['process', 'Buffer', 'setImmediate', 'clearImmediate', 'global', '__dirname', '__filename', 'require']
const MARK = '__concord_node_global_'
const builtins = new Set(builtinModules)

/** What a browser build gives. */
export interface BrowserBundle {
  /** The bundle's JavaScript. */
  readonly code: Uint8Array
  readonly bytes: number
  readonly gzipBytes: number
  /** Node built-ins and Node-only packages the graph imports, `what <- importer` (empty when clean). */
  readonly nodeImports: string[]
  /** Built-in names served by npm packages (`events -> node_modules/events/events.js`). */
  readonly polyfills: string[]
  /** Node globals used by our own modules of the graph, `file: name`. */
  readonly nodeGlobals: string[]
  /** Every input file of the graph, relative to the root. */
  readonly inputs: string[]
  /** Bytes of the (unminified) output by package or folder of ours, largest first. */
  readonly breakdown: Array<{ readonly part: string; readonly bytes: number }>
}

/** Options of {@link bundleForBrowser}. */
export interface BundleOptions {
  /** Minify (default true: sizes are reported minified). */
  readonly minify?: boolean
  /** Keep the bundle in memory only (default); or write it here. */
  readonly outfile?: string
  /** Where the entry's imports resolve from (default: the repository root; the packaging test gives an installed project). */
  readonly resolveDir?: string
  /** Modules to take from another file (a test page's `node:assert/strict`), relative to the root. */
  readonly aliases?: Readonly<Record<string, string>>
}

function partOf(file: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)
  if (match) return match[1]
  return `concord ${file.split('/')[0]}/`
}

/** Bundles `source` (the text of an entry module whose imports resolve from the root) for the browser. */
export async function bundleForBrowser(source: string, options: BundleOptions = {}): Promise<BrowserBundle> {
  const nodeImports: string[] = []
  const polyfills = new Set<string>()
  const guard: esbuild.Plugin = {
    name: 'no-node-in-the-browser',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'guarded') return undefined
        const importer = args.importer ? relative(ROOT, args.importer) : 'the entry'
        const spec = args.path
        const alias = options.aliases?.[spec]
        if (alias !== undefined) return { path: join(ROOT, alias) }
        if (spec.startsWith('node:')) {
          nodeImports.push(`${spec} <- ${importer}`)
          return { path: spec, external: true }
        }
        if (NODE_ONLY_PACKAGES.some((pattern) => pattern.test(spec))) {
          nodeImports.push(`${spec} <- ${importer}`)
          return { path: spec, external: true }
        }
        if (!builtins.has(spec.split('/')[0])) return undefined
        // A built-in's name: fine only if an npm package of that name provides it for browsers.
        const resolved = await build.resolve(spec, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: 'guarded' })
        if (resolved.errors.length > 0 || !resolved.path.includes('/node_modules/')) {
          nodeImports.push(`${spec} <- ${importer}`)
          return { path: spec, external: true }
        }
        polyfills.add(`${spec} -> ${relative(ROOT, resolved.path)}`)
        return { path: resolved.path, namespace: resolved.namespace, sideEffects: resolved.sideEffects }
      })
    },
  }
  const result = await esbuild.build({
    stdin: { contents: source, resolveDir: options.resolveDir ?? ROOT, sourcefile: 'entry.ts', loader: 'ts' },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    minify: options.minify ?? true,
    write: options.outfile !== undefined,
    outfile: options.outfile,
    metafile: true,
    logLevel: 'silent',
    plugins: [guard],
  })
  const code = options.outfile !== undefined ? new Uint8Array(readFileSync(options.outfile)) : result.outputFiles![0].contents
  const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.startsWith('<stdin>'))
  const nodeGlobals: string[] = []
  for (const file of inputs) {
    if (file.includes('node_modules/') || file.startsWith('..') || !/\.ts$/.test(file) || file.endsWith('entry.ts')) continue
    const define = Object.fromEntries(NODE_GLOBALS.map((name) => [name, `${MARK}${name}`]))
    const { code: js } = await esbuild.transform(readFileSync(join(ROOT, file), 'utf8'), { loader: 'ts', format: 'esm', define })
    // A module that tests `typeof setImmediate === 'function'` picks what the platform has: its uses of that name are guarded.
    const guarded = new Set([...js.matchAll(new RegExp(`typeof\\s+${MARK}(\\w+)`, 'g'))].map((match) => match[1]))
    for (const match of js.matchAll(new RegExp(`${MARK}(\\w+)`, 'g'))) {
      if (!guarded.has(match[1])) nodeGlobals.push(`${file}: ${match[1]}`)
    }
  }
  const sizes = new Map<string, number>()
  for (const output of Object.values(result.metafile.outputs)) {
    for (const [file, { bytesInOutput }] of Object.entries(output.inputs)) sizes.set(partOf(file), (sizes.get(partOf(file)) ?? 0) + bytesInOutput)
  }
  const breakdown = [...sizes].map(([part, bytes]) => ({ part, bytes })).sort((a, b) => b.bytes - a.bytes)
  return {
    code,
    bytes: code.byteLength,
    gzipBytes: gzipSync(code, { level: 9 }).byteLength,
    nodeImports: [...new Set(nodeImports)],
    polyfills: [...polyfills],
    nodeGlobals: [...new Set(nodeGlobals)],
    inputs,
    breakdown,
  }
}
