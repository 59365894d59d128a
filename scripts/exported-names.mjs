#!/usr/bin/env node
// Lists the names every entry point of the package exports (package.json
// `exports`, from their sources: `./dist/x.d.ts` is `x.ts`) with the
// declaration each one resolves to, following `export ... from`, `export *`
// and imported-then-exported names, and reports names that two entry points
// export for two different declarations (one name, one thing, in the whole
// package). Run directly for the report; test/package/exported-names.test.ts
// asserts it finds none.
import { readFileSync, existsSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** The source file of each entry point: `{ entry, file }`. */
export function entryPoints() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const out = []
  for (const [entry, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'object' ? target.types : undefined
    if (typeof types !== 'string') continue
    const file = join(root, types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'))
    if (!existsSync(file)) throw new Error(`exported-names: ${entry} -> ${relative(root, file)} does not exist`)
    out.push({ entry, file })
  }
  return out
}

const parsed = new Map()
function strip(source) {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
}
function target(from, spec) {
  return spec.startsWith('.') ? resolve(dirname(from), spec) : undefined
}
function specifiers(list) {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const m = s.replace(/^type\s+/, '').match(/^(\S+)(?:\s+as\s+(\S+))?$/)
      return { name: m[1], as: m[2] ?? m[1] }
    })
}

/** A module's exports: name -> `file#name` of its declaration (a package's name for what comes from npm). */
export function exportsOf(file) {
  if (parsed.has(file)) return parsed.get(file)
  const result = new Map()
  parsed.set(file, result)
  const code = strip(readFileSync(file, 'utf8'))
  const imported = new Map()
  for (const m of code.matchAll(/\bimport\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)) {
    for (const { name, as } of specifiers(m[1])) imported.set(as, { spec: m[2], name })
  }
  const resolveName = (spec, name) => {
    const to = target(file, spec)
    if (!to) return `${spec}#${name}`
    return exportsOf(to).get(name) ?? `${relative(root, to)}#${name}`
  }
  for (const m of code.matchAll(/\bexport\s+(?:type\s+)?\{([^}]*)\}(?:\s*from\s*['"]([^'"]+)['"])?/g)) {
    for (const { name, as } of specifiers(m[1])) {
      if (m[2]) result.set(as, resolveName(m[2], name))
      else if (imported.has(name)) result.set(as, resolveName(imported.get(name).spec, imported.get(name).name))
      else result.set(as, `${relative(root, file)}#${name}`)
    }
  }
  for (const m of code.matchAll(/\bexport\s+\*\s+from\s*['"]([^'"]+)['"]/g)) {
    const to = target(file, m[1])
    if (to) for (const [name, id] of exportsOf(to)) if (!result.has(name)) result.set(name, id)
  }
  for (const m of code.matchAll(
    /\bexport\s+(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:class|interface|type|function\*?|const|let|var|enum)\s+([A-Za-z_$][\w$]*)/g,
  )) {
    result.set(m[1], `${relative(root, file)}#${m[1]}`)
  }
  return result
}

/**
 * Names that stand for two things on purpose: the same API on two
 * platforms, so that code moves between them unchanged.
 */
export const PLATFORM_TWINS = new Map([['createPeer', 'concord and concord/browser: the same call, in Node and in a browser']])

/** Names two entry points export for different declarations: `[{ name, exports: [{ entry, declaration }] }]`. */
export function duplicateNames() {
  const byName = new Map()
  for (const { entry, file } of entryPoints()) {
    for (const [name, declaration] of exportsOf(file)) {
      if (!byName.has(name)) byName.set(name, [])
      byName.get(name).push({ entry, declaration })
    }
  }
  const out = []
  for (const [name, list] of byName) {
    if (PLATFORM_TWINS.has(name)) continue
    if (new Set(list.map((e) => e.declaration)).size > 1) out.push({ name, exports: list })
  }
  return out.sort((a, b) => a.name.localeCompare(b.name))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const duplicates = duplicateNames()
  for (const { name, exports } of duplicates) {
    console.log(`${name}:`)
    for (const { entry, declaration } of exports) console.log(`  ${entry.padEnd(24)} ${declaration}`)
  }
  console.log(duplicates.length === 0 ? 'exported names: ok' : `exported names: ${duplicates.length} names stand for two things`)
  process.exit(duplicates.length === 0 ? 0 : 1)
}
