import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { readFile, writeFile } from 'node:fs/promises'
import { ClassicLevel } from 'classic-level'
import * as Y from 'yjs'
import { LeveldbPersistence } from 'y-leveldb'
import { createPeer } from '../../peer/index.ts'
import { encodeKey } from '../../persistence/storage/level/key-codec.ts'
import { logPrefix } from '../../persistence/format/keys.ts'
import { documentValue } from '../../crdt/documents/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { cli, cliJson, makeFixture } from './helpers.ts'

async function withFixture(fn: (dir: string, root: string) => Promise<void>): Promise<void> {
  const root = await tempDir('concord-cli-')
  try {
    const dir = join(root.path, 'alice')
    await makeFixture(dir)
    await fn(dir, root.path)
  } finally {
    await root.remove()
  }
}

test('inspect lists every name with type, records, size, last change; prints one value; missing things exit 3', () =>
  withFixture(async (dir, root) => {
    const list = await cliJson(['inspect', '--dir', dir])
    assert.equal(list.code, 0)
    assert.equal(list.json.agentId, 'alice')
    const byName = Object.fromEntries(list.json.names.map((n: { name: string }) => [n.name, n]))
    assert.deepEqual(Object.keys(byName).sort(), ['facts', 'notes', 'plan', 'seen', 'spec', 'tasks'])
    assert.equal(byName.tasks.type, 'pncounter')
    assert.equal(byName.notes.type, 'yjs')
    assert.equal(byName.spec.type, 'automerge')
    assert.equal(byName.plan.lastSeq, 3)
    assert.ok(byName.plan.size > 0 && byName.plan.lastChange > 0)

    const text = await cli(['inspect', '--dir', dir])
    assert.equal(text.code, 0)
    assert.match(text.stdout, /^NAME\s+TYPE\s+RECORDS/m)
    assert.match(text.stdout, /^tasks\s+pncounter\s+\d+\s+2/m)

    assert.equal((await cliJson(['inspect', '--dir', dir, 'tasks'])).json.value, 5)
    assert.deepEqual((await cliJson(['inspect', '--dir', dir, 'notes'])).json.value, { t: 'hello' })
    assert.deepEqual(JSON.parse((await cli(['inspect', '--dir', dir, 'seen'])).stdout), ['b'])

    const missingName = await cli(['inspect', '--dir', dir, 'nope'])
    assert.equal(missingName.code, 3)
    assert.match(missingName.stderr, /no name "nope"/)
    const missingDir = await cli(['inspect', '--dir', join(root, 'absent')])
    assert.equal(missingDir.code, 3)
    assert.match(missingDir.stderr, /no Concord data folder/)
    const asJson = await cliJson(['inspect', '--dir', join(root, 'absent')])
    assert.equal(asJson.code, 3)
    assert.equal(asJson.json.ok, false)
  }))

test('history, at and revert: time travel from the command line', () =>
  withFixture(async (dir) => {
    const history = await cliJson(['history', '--dir', dir, 'plan'])
    assert.equal(history.code, 0)
    assert.deepEqual(
      history.json.map((r: { seq: number }) => r.seq),
      [1, 2, 3],
    )
    assert.ok(history.json.every((r: { agent: string; hash: string }) => r.agent === 'alice' && /^[0-9a-f]{64}$/.test(r.hash)))
    const reversed = await cliJson(['history', '--dir', dir, 'plan', '--reverse', '--limit', '1'])
    assert.deepEqual(
      reversed.json.map((r: { seq: number }) => r.seq),
      [3],
    )

    assert.deepEqual((await cliJson(['at', '--dir', dir, 'plan', '1'])).json.value, { step: 1 })
    assert.deepEqual((await cliJson(['at', '--dir', dir, 'plan', '2'])).json.value, { step: 2 })
    assert.equal((await cli(['at', '--dir', dir, 'plan', '9'])).code, 3)
    const bad = await cli(['at', '--dir', dir, 'plan', 'x'])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /SEQ must be a whole number/)

    const revert = await cliJson(['revert', '--dir', dir, 'plan', '1'])
    assert.equal(revert.code, 0)
    assert.equal(revert.json.seq, 4)
    assert.deepEqual(revert.json.value, { step: 1 })
    assert.deepEqual((await cliJson(['inspect', '--dir', dir, 'plan'])).json.value, { step: 1 })
    const again = await cliJson(['revert', '--dir', dir, 'plan', '4'])
    assert.equal(again.code, 0)
    assert.equal(again.json.seq, null, 'already at that value: nothing written')
    const after = await cliJson(['history', '--dir', dir, 'plan'])
    assert.equal(after.json.at(-1).seq, 4)
  }))

test('verify passes on a sound folder and exits 5 on a damaged record', () =>
  withFixture(async (dir) => {
    const ok = await cliJson(['verify', '--dir', dir])
    assert.equal(ok.code, 0)
    assert.equal(ok.json.ok, true)
    assert.equal(ok.json.reports.length, 6)
    assert.equal((await cli(['verify', '--dir', dir, 'plan'])).code, 0)

    // Flip one byte in the middle of plan's first log record (intact records follow it).
    const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' })
    const prefix = encodeKey(logPrefix('plan'))
    let damaged = false
    for await (const [key, value] of db.iterator({ gt: prefix, lt: Uint8Array.from([...prefix, 0xff]) })) {
      const copy = value.slice()
      copy[Math.floor(copy.length / 2)] ^= 0xff
      await db.put(key, copy)
      damaged = true
      break
    }
    await db.close()
    assert.ok(damaged)
    const failed = await cli(['verify', '--dir', dir, 'plan'])
    assert.equal(failed.code, 5, failed.stderr + failed.stdout)
    assert.doesNotMatch(failed.stderr, /\n\s+at /, 'no stack trace')
    assert.equal((await cli(['verify', '--dir', dir, 'tasks'])).code, 0, 'other names are unaffected')

    // repair: the damaged first record goes, the intact ones after it stay; verify passes again.
    const repaired = await cliJson(['repair', '--dir', dir])
    assert.equal(repaired.code, 0, repaired.stderr)
    const plan = repaired.json.reports.find((r: { name: string }) => r.name === 'plan')
    assert.deepEqual([plan.repaired, plan.cutAt, plan.lostRecords, plan.salvagedRecords], [true, 1, 1, 2])
    assert.equal(repaired.json.reports.filter((r: { repaired: boolean }) => r.repaired).length, 1)
    assert.equal((await cli(['verify', '--dir', dir])).code, 0)
    const again = await cli(['repair', '--dir', dir, 'plan'])
    assert.match(again.stdout, /nothing to repair/)
  }))

test('compact, gc, archive, restore and expire', () =>
  withFixture(async (dir) => {
    const compact = await cliJson(['compact', '--dir', dir])
    assert.equal(compact.code, 0)
    assert.equal(compact.json.checkpoints.length, 6)
    const gc = await cliJson(['gc', '--dir', dir])
    assert.equal(gc.code, 0)
    assert.equal(typeof gc.json.deletedRecords, 'number')

    const archived = await cliJson(['archive', '--dir', dir, 'seen'])
    assert.equal(archived.code, 0)
    assert.match(archived.json.file, /\.concord-archive\.gz$/)
    await readFile(archived.json.file) // the archive file exists
    const listed = await cliJson(['inspect', '--dir', dir])
    assert.equal(listed.json.names.find((n: { name: string }) => n.name === 'seen').archived, true)
    assert.equal((await cliJson(['inspect', '--dir', dir, 'seen'])).json.archived, true)
    assert.equal((await cliJson(['verify', '--dir', dir])).json.skipped[0], 'seen')

    const restored = await cliJson(['restore', '--dir', dir, 'seen'])
    assert.equal(restored.code, 0)
    assert.equal(restored.json.restored, true)
    assert.deepEqual((await cliJson(['inspect', '--dir', dir, 'seen'])).json.value, ['b'])
    assert.equal((await cliJson(['restore', '--dir', dir, 'seen'])).json.restored, false, 'not archived any more')
    assert.equal((await cli(['archive', '--dir', dir, 'nope'])).code, 3)

    assert.deepEqual((await cliJson(['expire', '--dir', dir])).json.expired, [], 'no TTL: nothing expires')
    await new Promise((resolve) => setTimeout(resolve, 5))
    const expired = await cliJson(['expire', '--dir', dir, '--ttl', '1', '--yes'])
    assert.equal(expired.code, 0)
    assert.deepEqual(expired.json.expired.sort(), ['facts', 'notes', 'plan', 'seen', 'spec', 'tasks'])
    assert.deepEqual((await cliJson(['inspect', '--dir', dir])).json.names, [])
  }))

test('export and import round-trip exactly, JSON Lines and binary; bad input is a clean error', () =>
  withFixture(async (dir, root) => {
    const jsonl = await cli(['export', '--dir', dir])
    assert.equal(jsonl.code, 0)
    const lines = jsonl.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.equal(lines[0].format, 'concord-export')
    assert.equal(lines[0].names, 6)
    assert.deepEqual(lines.find((l) => l.name === 'tasks').value, 5, 'human-readable value')

    const binaryFile = join(root, 'dump.bin')
    const binary = await cliJson(['export', '--dir', dir, '--format', 'binary', '--out', binaryFile])
    assert.equal(binary.code, 0)
    const bytes = new Uint8Array(await readFile(binaryFile))
    assert.equal(bytes[0], 1, 'version byte first')

    const jsonlFile = join(root, 'dump.jsonl')
    await writeFile(jsonlFile, jsonl.stdout)
    const fromJsonl = await cliJson(['import', '--dir', join(root, 'b'), jsonlFile])
    assert.equal(fromJsonl.code, 0)
    assert.equal(fromJsonl.json.created, 6)
    assert.equal(fromJsonl.json.format, 'jsonl')
    const fromBinary = await cli(['import', '--dir', join(root, 'c'), '-'], { input: bytes })
    assert.equal(fromBinary.code, 0, fromBinary.stderr)

    // Exact: exporting the imported folders gives the same states, byte for byte.
    const body = (text: string) => text.trim().split('\n').slice(1).join('\n')
    assert.equal(body((await cli(['export', '--dir', join(root, 'b')])).stdout), body(jsonl.stdout))
    assert.equal(body((await cli(['export', '--dir', join(root, 'c')])).stdout), body(jsonl.stdout))
    assert.equal((await cli(['verify', '--dir', join(root, 'c')])).code, 0)

    // Importing again joins: nothing changes.
    const twice = await cliJson(['import', '--dir', join(root, 'c'), jsonlFile])
    assert.equal(twice.json.created, 0)
    assert.equal(body((await cli(['export', '--dir', join(root, 'c')])).stdout), body(jsonl.stdout))

    // Bad input: a typed error, exit 1, nothing written.
    const flipped = bytes.slice()
    flipped[10] ^= 0x55
    const corrupt = await cli(['import', '--dir', join(root, 'd'), '-'], { input: flipped })
    assert.equal(corrupt.code, 1)
    assert.match(corrupt.stderr, /CONCORD_DECODE_ERROR/)
    const truncated = await cli(['import', '--dir', join(root, 'd'), '-'], { input: new TextEncoder().encode(jsonl.stdout.slice(0, jsonl.stdout.length - 40)) })
    assert.equal(truncated.code, 1)
    assert.match(truncated.stderr, /CONCORD_DECODE_ERROR/)
    const notAnExport = await cli(['import', '--dir', join(root, 'd'), '-'], { input: new TextEncoder().encode('{"hello":1}\n') })
    assert.equal(notAnExport.code, 1)
    assert.equal((await cli(['import', '--dir', join(root, 'd'), join(root, 'missing.jsonl')])).code, 3)
    assert.equal((await cli(['inspect', '--dir', join(root, 'd')])).code, 3, 'failed imports did not even create the folder')
    // A name of another type: refused with a type mismatch.
    const other = join(root, 'e')
    const peer = await createPeer({ agentId: 'e', dir: other })
    const clash = await peer.set('tasks')
    clash.add(1)
    await peer.close()
    const mismatch = await cli(['import', '--dir', other, jsonlFile])
    assert.equal(mismatch.code, 1)
    assert.match(mismatch.stderr, /CONCORD_TYPE_MISMATCH/)
  }))

test('import --from-y-leveldb brings every document of a real y-leveldb database, equal to its getYDoc', async () => {
  const root = await tempDir('concord-cli-yl-')
  try {
    const source = join(root.path, 'yl')
    const persistence = new LeveldbPersistence(source)
    const expected = new Map<string, Y.Doc>()
    for (const name of ['alpha', 'beta', 'gamma']) {
      const doc = new Y.Doc()
      const stored: Promise<unknown>[] = []
      doc.on('update', (update: Uint8Array) => {
        stored.push(persistence.storeUpdate(name, update))
      })
      doc.getText('body').insert(0, `the ${name} document`)
      doc.getMap('meta').set('name', name)
      const items = doc.getArray<number>('items')
      for (let i = 0; i < (name === 'beta' ? 550 : 20); i++) items.push([i]) // beta: over y-leveldb's trim size
      doc.getText('body').delete(0, 4)
      await Promise.all(stored)
      expected.set(name, doc)
    }
    // flushDocument exists in y-leveldb 0.2.0 but is missing from its type declarations.
    await (persistence as unknown as { flushDocument(name: string): Promise<void> }).flushDocument('alpha')
    await persistence.destroy()

    const target = join(root.path, 'concord')
    const run = await cliJson(['import', '--dir', target, '--from-y-leveldb', source, '--prefix', 'yl/'])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(run.json.ok, true)
    assert.deepEqual(run.json.documents.map((d: { name: string }) => d.name).sort(), ['yl/alpha', 'yl/beta', 'yl/gamma'])
    assert.ok(run.json.documents.every((d: { verified: boolean; created: boolean }) => d.verified && d.created))

    // Independently: what Concord holds equals what y-leveldb returns, and what was written.
    const check = new LeveldbPersistence(source)
    const peer = await createPeer({ agentId: 'reader', dir: join(root.path, 'reader') })
    try {
      const dump = await cli(['export', '--dir', target, '--format', 'binary', '--out', join(root.path, 'y.bin')])
      assert.equal(dump.code, 0)
      assert.equal((await cli(['import', '--dir', join(root.path, 'reader2'), join(root.path, 'y.bin')])).code, 0)
      for (const [name, original] of expected) {
        const fromYLeveldb = await check.getYDoc(name)
        const value = (await cliJson(['inspect', '--dir', target, `yl/${name}`])).json.value
        assert.deepEqual(value, documentValue(fromYLeveldb))
        assert.equal(value.body, `${name} document`)
        assert.deepEqual(value.items, original.getArray('items').toJSON())
      }
    } finally {
      await check.destroy()
      await peer.close()
    }
    // A second import merges (nothing new) and still verifies.
    const again = await cliJson(['import', '--dir', target, '--from-y-leveldb', source, '--prefix', 'yl/'])
    assert.equal(again.code, 0)
    assert.ok(again.json.documents.every((d: { verified: boolean; created: boolean }) => d.verified && !d.created))
    // Missing source: exit 3.
    assert.equal((await cli(['import', '--dir', target, '--from-y-leveldb', join(root.path, 'nothing')])).code, 3)
    assert.equal((await cli(['import', '--dir', target, 'file', '--from-y-leveldb', source])).code, 2)
  } finally {
    await root.remove()
  }
})

test('usage errors exit 2 with a hint; --help everywhere exits 0 and lists the exit codes', async () => {
  const unknown = await cli(['frobnicate'])
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /unknown command/)
  const noDir = await cli(['inspect'])
  assert.equal(noDir.code, 2)
  assert.match(noDir.stderr, /--dir/)
  const badFormat = await cli(['export', '--dir', '/tmp', '--format', 'xml'])
  assert.equal(badFormat.code, 2)
  const help = await cli(['--help'])
  assert.equal(help.code, 0)
  assert.match(help.stdout, /Exit codes:/)
  for (const command of [
    'serve',
    'inspect',
    'history',
    'blame',
    'diff',
    'restore-at',
    'at',
    'revert',
    'verify',
    'repair',
    'compact',
    'gc',
    'archive',
    'restore',
    'expire',
    'export',
    'import',
  ]) {
    const run = await cli([command, '--help'])
    assert.equal(run.code, 0, command)
    assert.match(run.stdout, new RegExp(`Usage: concord ${command}`))
    assert.match(run.stdout, /4 {2}locked/)
  }
  assert.equal((await cli([])).code, 2, 'no command: help and usage exit')
  const libp2p = await cli(['serve', '--dir', '/tmp/never', '--bootstrap', 'not-a-multiaddr'])
  assert.equal(libp2p.code, 2, libp2p.stderr)
  assert.match(libp2p.stderr, /multiaddr/)
})
