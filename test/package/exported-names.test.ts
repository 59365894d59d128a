/**
 * One name, one thing: no two entry points of the package (package.json
 * `exports`) export different declarations under one name (the platform
 * twins of scripts/exported-names.mjs aside: `createPeer` in Node and in a
 * browser).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
// @ts-expect-error a plain .mjs script, without declarations
import { duplicateNames, entryPoints, exportsOf } from '../../scripts/exported-names.mjs'

describe('exported names', () => {
  it('reads every entry point and finds its names', () => {
    const entries = entryPoints() as Array<{ entry: string; file: string }>
    assert.ok(entries.length >= 10, `entry points: ${entries.map((e) => e.entry).join(', ')}`)
    const root = exportsOf(entries.find((e) => e.entry === '.')!.file) as Map<string, string>
    assert.equal(root.get('createPeer'), 'peer/peer.ts#createPeer', 'a name re-exported through two barrels resolves to its declaration')
    assert.equal(root.get('PeerOptions'), 'peer/options.ts#PeerOptions')
  })

  it('no name stands for two declarations across the entry points', () => {
    const duplicates = duplicateNames() as Array<{ name: string; exports: Array<{ entry: string; declaration: string }> }>
    assert.deepEqual(
      duplicates.map((d) => `${d.name}: ${d.exports.map((e) => `${e.entry} ${e.declaration}`).join(', ')}`),
      [],
    )
  })
})
