#!/usr/bin/env node
// Enforces the layer rules of docs/design-sketch.md on import statements:
// - crdt/ imports only crdt/ (and npm packages that run in a browser);
// - sync/ imports only sync/ and crdt/;
// - transports/ import only transports/ and the base utilities of crdt/
//   (errors, codec, emitter): they move bytes and know no CRDT;
// - persistence/ imports no sync/, transports/ or peer/ (it knows no network);
//   inside it, the formats (persistence/format/) import nothing but each
//   other and the crdt base utilities they encode with (errors, codec, hlc,
//   crc32, the signature layout, and the replica types and registry for the type tag), and the
//   storage adapters (persistence/storage/) only each other and crdt/errors,
//   crdt/codec: they move bytes and know no record; the browser's modules
//   (persistence/browser/: the IndexedDB adapter and the twins of the
//   Node-only modules) import only what those may; the behaviour is in
//   layers that import only the layers below them: pipeline/ (the commit
//   queue: no replica, no entry) < names/ (the owner of per-name state) <
//   writes/ (the write path) < lifecycle/ < history/ < the facade
//   (persistence/*.ts; context.ts, options.ts, store-types.ts and signing.ts are shared
//   from names/ up, turn.ts from pipeline/ up);
// - testing/ (the conformance suites of concord-crdt/testing) imports only the
//   interfaces it checks and what it checks them with: crdt/, persistence/,
//   transports/ (no peer/, sync/ or cli/), and peer/test-peer.ts for
//   createTestPeer (a peer with the test hooks createPeer refuses);
// - peer/ (the composition root) imports no layer above it (mcp/, cli/, demos/),
//   but the inspector's route, loaded by listen({ ui: true });
// - inspector/ (the /ui page's route and read-only API) imports peer/ and what
//   is beneath it, and blame and diff from mcp/ (inspector/history-adapter.ts,
//   until they move below the peer); inspector/page/ (bundled for browsers)
//   imports only itself, concord/browser (browser.ts) and the shared charts,
//   and no Node-only module;
// - mcp/ (the MCP server, a door above the peer) imports peer/ and what is
//   beneath it, but not transports/ (the peer's listener serves it) nor cli/ or demos/;
// - crdt/ and sync/ use no Node-only API (node: modules, Buffer, process, timers);
// - the type catalog (crdt/catalog.ts, docs/adding-a-type.md) is the one list
//   of type tags: a type is defined (defineNativeType / defineDocumentType)
//   only in its own file, crdt/types/ or crdt/documents/; no other source
//   file holds a list (an array or a union) of three or more type tags; the
//   type lists (KNOWN_TYPES, NATIVE_TYPES, a ReplicaType or NativeType union)
//   are declared only in crdt/catalog.ts, and sync/ and peer/ take them
//   from it (they import crdt/catalog.ts where they name them).
// Import cycles are checked separately by dpdm (npm run cycles).
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative, dirname, resolve } from 'node:path'

const root = resolve(dirname(new URL(import.meta.url).pathname), '..')
const baseUtilities = new Set(['crdt/errors.ts', 'crdt/codec.ts', 'crdt/emitter.ts'])
const formatUtilities = new Set([
  ...baseUtilities,
  'crdt/agent-id.ts',
  'crdt/hlc.ts',
  'crdt/types/crc32.ts',
  'crdt/replica.ts',
  'crdt/registry.ts',
  'crdt/signature.ts',
])
/** The behaviour layers of persistence/, lowest first, and the folders a layer may import (itself and those below). */
const persistenceLayers = ['format', 'storage', 'pipeline', 'names', 'writes', 'lifecycle', 'history']
const below = (layer) => persistenceLayers.slice(0, persistenceLayers.indexOf(layer) + 1).map((name) => `persistence/${name}`)
/** Files of the facade's folder that the layers from names/ up share. */
const shared = new Set(['persistence/context.ts', 'persistence/options.ts', 'persistence/store-types.ts', 'persistence/turn.ts', 'persistence/signing.ts'])
// By folder; a file follows the rule of the longest folder that holds it. `allow` lists folders.
const rules = {
  crdt: { allow: ['crdt'], pure: true },
  sync: { allow: ['sync', 'crdt'], pure: true },
  transports: { allow: ['transports'], allowFiles: baseUtilities, pure: false },
  persistence: { allow: ['persistence', 'crdt'], pure: false },
  'persistence/format': { allow: ['persistence/format'], allowFiles: formatUtilities, pure: false },
  'persistence/storage': { allow: ['persistence/storage'], allowFiles: new Set(['crdt/errors.ts', 'crdt/codec.ts']), pure: false },
  'persistence/pipeline': {
    allow: ['persistence/pipeline', 'persistence/format', 'persistence/storage'],
    allowFiles: new Set([...baseUtilities, 'crdt/hlc.ts', 'persistence/turn.ts']),
    pure: false,
  },
  'persistence/names': { allow: [...below('names'), 'crdt'], allowFiles: shared, pure: false },
  'persistence/writes': { allow: [...below('writes'), 'crdt'], allowFiles: shared, pure: false },
  'persistence/lifecycle': { allow: [...below('lifecycle'), 'crdt'], allowFiles: shared, pure: false },
  'persistence/history': { allow: [...below('history'), 'crdt'], allowFiles: shared, pure: false },
  'persistence/browser': { allow: ['persistence/browser', 'persistence/storage', 'persistence/format'], allowFiles: formatUtilities, pure: false },
  testing: { allow: ['testing', 'crdt', 'persistence', 'transports'], allowFiles: new Set(['peer/test-peer.ts', 'peer/options.ts']), pure: false },
  peer: { allow: ['peer', 'crdt', 'sync', 'transports', 'persistence'], allowFiles: new Set(['inspector/route.ts']), pure: false },
  mcp: { allow: ['mcp', 'peer', 'crdt', 'sync', 'persistence'], pure: false },
  inspector: {
    allow: ['inspector', 'peer', 'crdt', 'sync', 'persistence'],
    allowFiles: new Set(['mcp/blame.ts', 'mcp/diff.ts', 'mcp/paging.ts']),
    pure: false,
  },
  'inspector/page': { allow: ['inspector/page'], allowFiles: new Set(['browser.ts', 'inspector/charts.ts']), browser: true, pure: false },
}
/** The rule of a file: the longest folder of `rules` that holds it. */
function ruleOf(rel) {
  const layer = Object.keys(rules)
    .filter((folder) => rel.startsWith(`${folder}/`))
    .sort((a, b) => b.length - a.length)[0]
  return layer && { layer, rule: rules[layer] }
}
/** Whether `target` lies in one of `folders`. */
const inFolders = (target, folders) => folders.some((folder) => target.startsWith(`${folder}/`))
const nodeOnlyPackages = /^(node:|fs$|net$|path$|os$|child_process$|ws$|classic-level$|level$)/
const nodeOnlyGlobals = /\b(Buffer|process\.|setTimeout|setInterval|setImmediate|require\()/

function walk(dir) {
  const out = []
  for (const entry of readdirSync(dir)) {
    const full = join(dir, entry)
    if (statSync(full).isDirectory()) out.push(...walk(full))
    else if (full.endsWith('.ts')) out.push(full)
  }
  return out
}

const problems = []
const seen = new Set()
for (const top of Object.keys(rules).filter((folder) => !folder.includes('/'))) {
  let files = []
  try {
    files = walk(join(root, top))
  } catch {
    continue
  }
  for (const file of files) {
    const rel = relative(root, file)
    if (seen.has(rel)) continue
    seen.add(rel)
    const { layer, rule } = ruleOf(rel)
    const source = readFileSync(file, 'utf8')
    const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
    for (const match of code.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = match[1] ?? match[2]
      if (spec.startsWith('.')) {
        const target = relative(root, resolve(dirname(file), spec))
        const allowed = inFolders(target, rule.allow) || rule.allowFiles?.has(target)
        if (!allowed) problems.push(`${rel}: imports ${target} (${layer}/ may import ${[...rule.allow, ...(rule.allowFiles ?? [])].join(', ')})`)
      } else if ((rule.pure || rule.browser) && nodeOnlyPackages.test(spec)) {
        problems.push(`${rel}: imports the Node-only module '${spec}'`)
      }
    }
    if (rule.pure && nodeOnlyGlobals.test(code)) {
      problems.push(`${rel}: uses a Node-only global (${code.match(nodeOnlyGlobals)[0]})`)
    }
  }
}
// The type catalog's rules (see the header).
const typeFiles = ['crdt/types', 'crdt/documents']
const tags = new Set()
for (const folder of typeFiles) {
  for (const file of walk(join(root, folder))) {
    const code = readFileSync(file, 'utf8')
    for (const call of code.matchAll(/define(?:Native|Document)Type(?:<[^>]*>)?\(\{[\s\S]*?\btag:\s*'([^']+)'/g)) tags.add(call[1])
  }
}
if (tags.size < 10) problems.push(`type catalog: found ${tags.size} type definitions in ${typeFiles.join(', ')}, expected the 10 built-in ones`)
const catalogFile = 'crdt/catalog.ts'
const sourceRoots = ['crdt', 'sync', 'transports', 'persistence', 'testing', 'peer', 'mcp', 'inspector', 'cli', 'index.ts', 'browser.ts']
const tagList = new RegExp(`'(${[...tags].map((t) => t.replace(/[-]/g, '\\-')).join('|')})'`, 'g')
for (const top of sourceRoots) {
  const full = join(root, top)
  let files
  try {
    files = statSync(full).isDirectory() ? walk(full) : [full]
  } catch {
    continue
  }
  for (const file of files) {
    const rel = relative(root, file)
    if (rel === catalogFile) continue
    const code = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '')
    if (/\bdefine(?:Native|Document)Type\(/.test(code) && !inFolders(rel, typeFiles) && !/function define(?:Native|Document)Type/.test(code)) {
      problems.push(`${rel}: defines a type outside its own file in ${typeFiles.join(' or ')}`)
    }
    // A list of tags: an array literal or a union type naming three or more of them.
    for (const list of code.matchAll(/\[[^[\]]*\]|(?:'[^']*'\s*\|\s*){2,}'[^']*'/g)) {
      const named = new Set([...list[0].matchAll(tagList)].map((m) => m[1]))
      if (named.size >= 3) problems.push(`${rel}: lists type tags (${[...named].join(', ')}); take the list from ${catalogFile}`)
    }
    if (/\b(?:const|let|var)\s+(?:KNOWN_TYPES|NATIVE_TYPES)\b|\btype\s+(?:ReplicaType|NativeType)\s*=/.test(code)) {
      problems.push(`${rel}: declares a type list (KNOWN_TYPES, NATIVE_TYPES, ReplicaType, NativeType); only ${catalogFile} may`)
    }
    if ((rel.startsWith('sync/') || rel.startsWith('peer/')) && /\b(?:KNOWN_TYPES|NATIVE_TYPES|isKnownType|isNativeType)\b/.test(code)) {
      const fromCatalog = /from\s+['"](?:\.\.\/)+crdt\/catalog\.ts['"]/.test(code)
      const reexported = rel === 'sync/index.ts' && /from\s+['"]\.\/messages\.ts['"]/.test(code)
      if (!fromCatalog && !reexported) problems.push(`${rel}: names the type list without importing it from ${catalogFile}`)
    }
  }
}

if (problems.length > 0) {
  console.error(`layer rules broken (see docs/design-sketch.md):\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log('layers: ok')
