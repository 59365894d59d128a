/**
 * A full disk, for real: a peer on a 2 MiB tmpfs (mounted for the test; it
 * needs root, and the test says so when it cannot mount) writes until LevelDB
 * fails with ENOSPC. Then: memory holds exactly what was acknowledged (the
 * refused writes were rolled back); once space is freed, the next
 * acknowledged write is on disk (a copy of the folder taken right after the
 * acknowledgement holds it, and so does a clean close and reopen); and a store
 * that filled the disk again opens on that disk once space exists.
 *
 * Before the fix the acknowledged write after the failure was missing from
 * both (LevelDB's log writer had advanced past the partial record of the
 * failed write, so the next records were misplaced and dropped on open).
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import type { ORSetReplica } from '../../crdt/types/index.ts'
import { createPeer, type Peer } from '../../peer/index.ts'
import { openStore } from '../../persistence/index.ts'

/** Mounts a tmpfs of `size` at a fresh temp folder; undefined (with the reason) when not permitted. */
async function mountTmpfs(size: string): Promise<{ path: string; unmount: () => Promise<void> } | { reason: string }> {
  const path = await mkdtemp(join(tmpdir(), 'concord-tmpfs-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', path], { stdio: 'pipe' })
  } catch (error) {
    await rm(path, { recursive: true, force: true })
    return { reason: `cannot mount a tmpfs (needs root): ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}` }
  }
  return {
    path,
    unmount: async () => {
      execFileSync('umount', [path], { stdio: 'pipe' })
      await rm(path, { recursive: true, force: true })
    },
  }
}

const probe = await mountTmpfs('64k')
const skip = 'reason' in probe ? probe.reason : false
if ('unmount' in probe) await probe.unmount()
if (skip) console.log(`# full-disk tests skipped: ${skip}`)

const ELEMENT = 'x'.repeat(1000)
const element = (i: number): string => `${String(i).padStart(5, '0')}:${ELEMENT}`

/** Adds elements one transact at a time until one is refused; returns the acknowledged ones. */
async function fill(peer: Peer, set: ORSetReplica<string>, from: number, refusals: number): Promise<{ acked: string[]; refused: string[] }> {
  const acked: string[] = []
  const refused: string[] = []
  for (let i = from; refused.length < refusals; i++) {
    assert.ok(i < from + 5000, 'the disk never filled')
    try {
      await peer.transact(() => {
        set.add(element(i))
      })
      acked.push(element(i))
    } catch (error) {
      assert.ok(isConcordError(error, 'CONCORD_STORAGE_ERROR'), `expected CONCORD_STORAGE_ERROR, got ${String(error)}`)
      refused.push(element(i))
    }
  }
  return { acked, refused }
}

/** Asserts equal sets of elements, naming the extra and missing ones by their number. */
function assertSameElements(actual: readonly string[], expected: readonly string[], what: string): void {
  const label = (e: string): string => e.split(':')[0]
  const want = new Set(expected)
  const have = new Set(actual)
  const extra = actual.filter((e) => !want.has(e)).map(label)
  const missing = expected.filter((e) => !have.has(e)).map(label)
  assert.ok(
    extra.length === 0 && missing.length === 0,
    `${what}: ${extra.length} extra (${extra.slice(0, 5).join(', ')}), ${missing.length} missing (${missing.slice(0, 5).join(', ')}) of ${expected.length}`,
  )
}

async function storedSet(dir: string): Promise<string[]> {
  const store = await openStore({ dir, agentId: 'disk', sweepMs: 0 })
  try {
    return ((await store.open('items', 'orset')).value() as string[]).slice().sort()
  } finally {
    await store.close()
  }
}

it('a full disk: refused writes are rolled back, the next acknowledged write after space is freed is on disk, and the store reopens', {
  skip,
  timeout: 120_000,
}, async () => {
  const disk = await mountTmpfs('2m')
  assert.ok('unmount' in disk)
  const copyRoot = await mkdtemp(join(tmpdir(), 'concord-disk-copy-'))
  const dir = join(disk.path, 'peer')
  const filler = join(disk.path, 'filler')
  let peer: Peer | undefined
  try {
    peer = await createPeer({ agentId: 'disk', dir, durability: { mode: 'sync' }, checkpoint: { everyRecords: 0, everyBytes: 0, everyMs: 0, onClose: false } })
    const set = await peer.set<string>('items')
    const rolledBack: string[] = []
    peer.store.events.on('rolledBack', ({ name }) => rolledBack.push(name))
    await writeFile(filler, Buffer.alloc(1_400_000))

    const first = await fill(peer, set, 0, 3)
    assert.ok(first.acked.length > 10, `only ${first.acked.length} writes fitted`)
    // Memory shows exactly what was acknowledged: every refused add was taken back.
    assertSameElements(set.values(), first.acked, 'in memory after the refusals')
    assert.ok(rolledBack.length >= 3)

    await rm(filler)
    await peer.transact(() => {
      set.add('after')
    })
    // Right after the acknowledgement, a copy of the folder holds it.
    const copy = join(copyRoot, 'copy')
    await cp(dir, copy, { recursive: true })
    const expected = [...first.acked, 'after']
    assertSameElements(await storedSet(copy), expected, 'a copy taken right after the acknowledgement')
    // And a clean close and reopen on the same disk.
    await peer.close()
    peer = undefined
    assertSameElements(await storedSet(dir), expected, 'after a clean close and reopen')

    // Fill the disk again, close, and reopen once there is space.
    peer = await createPeer({ agentId: 'disk', dir, durability: { mode: 'sync' }, checkpoint: { everyRecords: 0, everyBytes: 0, everyMs: 0, onClose: false } })
    const again = await peer.set<string>('items')
    await writeFile(filler, Buffer.alloc(1_300_000)).catch(() => undefined)
    const second = await fill(peer, again, 10_000, 2)
    assertSameElements(again.values(), [...expected, ...second.acked], 'in memory after the disk filled again')
    await peer.close().catch(() => undefined)
    peer = undefined
    await rm(filler, { force: true })
    assertSameElements(await storedSet(dir), [...expected, ...second.acked], 'reopened on that disk once space exists')
  } finally {
    await peer?.close().catch(() => undefined)
    await rm(copyRoot, { recursive: true, force: true })
    await disk.unmount()
  }
})
