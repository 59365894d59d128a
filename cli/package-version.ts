/**
 * The version of the installed concord-crdt package, read from its package.json
 * (found by walking up from this module: cli/ in the repository, dist/cli/
 * once built), so `concord --version` cannot drift from the release.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Reads the `version` of the nearest package.json named concord-crdt above this module. */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown }
      if (manifest.name === 'concord-crdt' && typeof manifest.version === 'string') return manifest.version
    }
    const parent = dirname(dir)
    if (parent === dir) return 'unknown'
    dir = parent
  }
}
