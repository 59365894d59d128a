/**
 * The seal (persistence/lifecycle/seal.ts): records lost inside LevelDB are detected.
 *
 * A cleanly closed store whose data lives only in its newest `.log`, with
 * that file truncated at a random point: LevelDB recovers the batches before
 * the cut without a word, so names went missing (2 to 94 of 121 in the
 * issue) and `concord verify` exited 0. Now every loss is found on open
 * (`lost` events, `Store.losses`), recorded until `repair` accepts it, and
 * `verify` exits 5 saying what to do. A crash (SIGKILL, no clean close) and
 * a deletion are no loss; a folder written before the seal opens unchanged.
 */
import assert from 'node:assert/strict'
import { cp, readdir, readFile, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { it } from 'node:test'
import type { ReplicaType } from '../../crdt/replica.ts'
import { gzipSync } from 'node:zlib'
import {
  decodeSealFile,
  encodeSealFile,
  encodeSealFileV1,
  packChunks,
  SEAL_CHUNK_NAMES,
  SEAL_FILE,
  sealEntries,
  sortEntries,
} from '../../persistence/format/seal.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { readSealFile, writeSealFile } from '../../persistence/lifecycle/seal-files.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { cli } from '../cli/helpers.ts'
import { mutate } from '../sync/helpers/memory-host.ts'
import { runAndKill } from './crash-harness.ts'
import { settle, tempDir } from './helpers.ts'

const TYPES: ReplicaType[] = ['orset', 'pncounter', 'yjs', 'automerge', 'ormap', 'lww-register']
const NAMES = 121

/** The newest LevelDB log of `dir` and its size. */
async function newestLog(dir: string): Promise<{ path: string; size: number }> {
  const logs = (await readdir(dir)).filter((f) => /^\d+\.log$/.test(f)).sort()
  assert.ok(logs.length > 0, 'no .log file')
  const path = join(dir, logs.at(-1)!)
  return { path, size: (await stat(path)).size }
}

/** Writes NAMES names (several records each) and closes cleanly; returns each name's last seq. */
async function writeAndClose(dir: string): Promise<Map<string, { type: ReplicaType; lastSeq: number }>> {
  const random = new Prng(3)
  // Not compacted on close: the names stay in the newest .log, which the trials truncate.
  const store = await openStore({ dir, agentId: 'sealed', sweepMs: 0, checkpoint: { onClose: false }, compactOnClose: false })
  for (let i = 0; i < NAMES; i++) {
    const type = TYPES[i % TYPES.length]
    const replica = await store.open(`name-${String(i).padStart(3, '0')}`, type)
    for (let j = 0; j < 1 + (i % 4); j++) mutate(replica, random, `v${i}.${j}`)
  }
  await store.flush()
  const seqs = new Map((await store.names()).map((n) => [n.name, { type: n.type, lastSeq: n.lastSeq }]))
  await store.close()
  return seqs
}

async function open(dir: string): Promise<Store> {
  return openStore({ dir, agentId: 'sealed', sweepMs: 0 })
}

it('a truncated newest .log of a cleanly closed store: every lost name and record is found, reported, counted, and verify fails until repair accepts it', {
  timeout: 120_000,
}, async () => {
  const { dir: root, remove } = await tempDir('concord-seal-')
  try {
    const original = join(root, 'original')
    const written = await writeAndClose(original)
    assert.equal(written.size, NAMES)
    const { size } = await newestLog(original)
    const random = new Prng(Number(process.env.CONCORD_SEED ?? 12))
    let trialsWithLosses = 0
    for (let trial = 0; trial < 4; trial++) {
      const dir = join(root, `trial-${trial}`)
      await cp(original, dir, { recursive: true })
      const log = await newestLog(dir)
      assert.equal(log.size, size)
      const cut = Math.floor(size * (0.05 + 0.9 * random.next()))
      await truncate(log.path, cut)

      const store = await open(dir)
      const events: Array<{ name: string; fromSeq: number; toSeq: number }> = []
      store.events.on('lost', (loss) => events.push(loss))
      await settle()
      // The truth: what the store holds against what was written before the close.
      const held = new Map((await store.names()).map((n) => [n.name, n.lastSeq]))
      const expected = [...written]
        .filter(([name, { lastSeq }]) => (held.get(name) ?? 0) < lastSeq)
        .map(([name, { lastSeq }]) => ({ name, fromSeq: (held.get(name) ?? 0) + 1, toSeq: lastSeq }))
      const context = `trial ${trial}, cut at ${cut} of ${size} bytes`
      assert.deepEqual(
        store.losses.map(({ name, fromSeq, toSeq }) => ({ name, fromSeq, toSeq })),
        expected,
        `${context}: Store.losses`,
      )
      assert.deepEqual(
        events.map(({ name, fromSeq, toSeq }) => ({ name, fromSeq, toSeq })),
        expected,
        `${context}: lost events`,
      )
      if (expected.length === 0) {
        await store.close()
        continue
      }
      trialsWithLosses++
      const shortened = expected.find((loss) => loss.fromSeq > 1)
      if (shortened) {
        const report = await store.verify(shortened.name)
        assert.equal(report.ok, false)
        assert.match(report.problems.join('\n'), /missing.*concord repair/s)
      }
      await store.close()

      // The CLI: verify fails (exit 5) and says what to do, also after more clean closes.
      for (let round = 0; round < 2; round++) {
        const verify = await cli(['verify', '--dir', dir])
        assert.equal(verify.code, 5, `${context}: verify exits 5 (round ${round})\n${verify.stdout}${verify.stderr}`)
        assert.match(verify.stdout, /concord repair/)
        for (const loss of expected) assert.ok(verify.stdout.includes(loss.name), `${context}: verify names ${loss.name}`)
      }
      // repair accepts the losses; then verify passes.
      const repair = await cli(['repair', '--dir', dir])
      assert.equal(repair.code, 0, repair.stdout + repair.stderr)
      const after = await cli(['verify', '--dir', dir])
      assert.equal(after.code, 0, after.stdout + after.stderr)
    }
    assert.ok(trialsWithLosses > 0, 'no trial lost anything')
  } finally {
    await remove()
  }
})

it('no false loss: an intact clean close, a deletion before the close, a SIGKILL with no close', { timeout: 60_000 }, async () => {
  const { dir, remove } = await tempDir('concord-seal-')
  try {
    await writeAndClose(dir)
    let store = await open(dir)
    assert.deepEqual(store.losses, [])
    await store.delete('name-000')
    await store.close()
    store = await open(dir)
    assert.deepEqual(store.losses, [])
    assert.equal((await store.names()).length, NAMES - 1)
    await store.close()
    assert.equal((await cli(['verify', '--dir', dir])).code, 0)

    // A writer killed with SIGKILL (its store never closes), then again after a clean close.
    const crash = await tempDir('concord-seal-crash-')
    try {
      for (let round = 0; round < 2; round++) {
        await runAndKill('test/persistence/fixtures/crash-writer.ts', [crash.dir, '4'], 30, (line) => line === 'ready')
        const crashed = await openStore({ dir: crash.dir, agentId: 'crash-writer', sweepMs: 0 })
        assert.deepEqual(crashed.losses, [], `round ${round}: a crash is no loss`)
        await crashed.close()
      }
    } finally {
      await crash.remove()
    }
  } finally {
    await remove()
  }
})

it('a folder written before the seal (test/persistence/fixtures/store-before-seal, written by main at 68408ed) opens unchanged, and is sealed by its first clean close', async () => {
  const { dir: root, remove } = await tempDir('concord-seal-')
  try {
    const dir = join(root, 'folder')
    await cp(new URL('./fixtures/store-before-seal', import.meta.url).pathname, dir, { recursive: true })
    const expected: Record<string, unknown> = {
      tasks: 5,
      seen: ['b'],
      plan: { step: 2 },
      notes: { t: 'hello' },
      spec: { items: ['x'] },
      facts: { hits: 4, k: 'v' },
    }
    for (let round = 0; round < 2; round++) {
      const store = await openStore({ dir, agentId: 'fixture', sweepMs: 0 })
      assert.deepEqual(store.losses, [])
      const names = await store.names()
      assert.deepEqual(names.map((n) => n.name).sort(), Object.keys(expected).sort())
      for (const info of names) {
        assert.deepEqual((await store.open(info.name, info.type)).value(), expected[info.name], `round ${round}: ${info.name}`)
        assert.deepEqual((await store.verify(info.name)).problems, [])
      }
      await store.close()
    }
    assert.ok((await readdir(dir)).includes('concord-seal'), 'the first clean close wrote the seal')
  } finally {
    await remove()
  }
})

it('the seal file is written in deflated chunks; one of version 1 (gzipped, or as it was before) is read', async () => {
  const { dir, remove } = await tempDir('concord-seal-gz-')
  try {
    const header = { agentId: 'a', generation: 3, closedAt: 7 }
    const names = [{ name: 'doc-000001', lastSeq: 3 }]
    const seal = encodeSealFile({ ...header, chunks: packChunks(names) })
    await writeSealFile(dir, SEAL_FILE, seal)
    const written = new Uint8Array(await readFile(join(dir, SEAL_FILE)))
    assert.equal(written[0], 2, 'format version 2, not gzipped as a whole')
    assert.deepEqual(await readSealFile(dir, SEAL_FILE), seal)
    assert.deepEqual(sealEntries(decodeSealFile((await readSealFile(dir, SEAL_FILE))!)), names)
    const v1 = encodeSealFileV1({ ...header, names })
    for (const bytes of [gzipSync(v1), v1]) {
      await writeFile(join(dir, SEAL_FILE), bytes)
      const file = decodeSealFile((await readSealFile(dir, SEAL_FILE))!)
      assert.deepEqual({ ...file, chunks: sealEntries(file) }, { ...header, chunks: names })
      assert.equal(decodeSealFile((await readSealFile(dir, SEAL_FILE))!, { names: false }).generation, 3)
    }
    // A damaged gzip stream reads as no seal (the seal then says nothing).
    await writeFile(join(dir, SEAL_FILE), gzipSync(v1).subarray(0, 12))
    assert.equal(await readSealFile(dir, SEAL_FILE), undefined)
  } finally {
    await remove()
  }
})

it('a close of a store of several chunks writes again only the chunks its written names fall in', async () => {
  const { dir, remove } = await tempDir('concord-seal-chunks-')
  try {
    const count = 2 * SEAL_CHUNK_NAMES + 500
    const name = (i: number): string => `task-${String(i).padStart(6, '0')}`
    let store = await openStore({ dir, agentId: 'a', sweepMs: 0, durability: { mode: 'async', rpoMs: 100 } })
    for (let start = 0; start < count; start += 1000) {
      const asked = Array.from({ length: Math.min(1000, count - start) }, (_, k) => ({ name: name(start + k), type: 'pncounter' as const }))
      for (const replica of await store.openMany(asked)) (replica as unknown as { increment(n: number): void }).increment(1)
    }
    await store.close()
    const before = decodeSealFile((await readSealFile(dir, SEAL_FILE))!)
    assert.equal(before.chunks.length, 3)
    store = await openStore({ dir, agentId: 'a', sweepMs: 0 })
    ;((await store.open(name(5000), 'pncounter')) as unknown as { increment(n: number): void }).increment(2)
    await store.open('task-004999x', 'orset').then((replica) => (replica as unknown as { add(v: string): void }).add('new'))
    await store.flush()
    const truth = (await store.names()).map((n) => ({ name: n.name, lastSeq: n.lastSeq }))
    await store.close()
    const after = decodeSealFile((await readSealFile(dir, SEAL_FILE))!)
    assert.deepEqual(sealEntries(after), sortEntries(truth))
    const kept = after.chunks.filter((chunk) => before.chunks.some((old) => Buffer.from(old.packed).equals(chunk.packed)))
    assert.equal(kept.length, 2, 'the chunks of the names not written are the same bytes')
    assert.equal(after.chunks.length, 3)
  } finally {
    await remove()
  }
})

/** The names the seal file of `dir` lists, with their last seq. */
async function sealedSeqs(dir: string): Promise<{ generation: number; names: Map<string, number> }> {
  const file = decodeSealFile((await readSealFile(dir, SEAL_FILE))!)
  return { generation: file.generation, names: new Map(sealEntries(file).map((n) => [n.name, n.lastSeq])) }
}

it('a close after a clean open lists the names written since on top of the last seal, as a full listing would: created, changed, deleted, archived, brought back', async () => {
  const { dir, remove } = await tempDir('concord-seal-')
  try {
    await writeAndClose(dir)
    const random = new Prng(5)
    for (let round = 0; round < 3; round++) {
      const store = await open(dir)
      assert.deepEqual(store.losses, [])
      for (let i = 0; i < 3; i++)
        mutate(await store.open(`name-${String(round * 7 + i).padStart(3, '0')}`, TYPES[(round * 7 + i) % TYPES.length]), random, `r${round}`)
      mutate(await store.open(`new-${round}`, 'orset'), random, 'new')
      await store.delete(`name-${String(100 + round).padStart(3, '0')}`)
      await store.archive(`name-${String(110 + round).padStart(3, '0')}`)
      // Brought back from the archive of the round before (opening rehydrates it), then changed.
      if (round > 0) mutate(await store.open(`name-${String(110 + round - 1).padStart(3, '0')}`, TYPES[(110 + round - 1) % TYPES.length]), random, 'back')
      await store.flush()
      const truth = new Map((await store.names()).map((n) => [n.name, n.lastSeq]))
      const before = await sealedSeqs(dir)
      await store.close()
      const after = await sealedSeqs(dir)
      assert.ok(after.generation > before.generation)
      assert.deepEqual(new Map([...after.names].sort()), new Map([...truth].sort()), `round ${round}: the seal lists what the store holds`)
    }
    const store = await open(dir)
    assert.deepEqual(store.losses, [])
    await store.close()
  } finally {
    await remove()
  }
})

it('the close reads again only the names written since the open when the seal file is the one of the open, and lists every name otherwise', async () => {
  const { dir, remove } = await tempDir('concord-seal-')
  try {
    await writeAndClose(dir)
    // A name the file lists and the store does not hold: only a close that starts from the file keeps it.
    const withGhost = async (generation?: number): Promise<void> => {
      const file = decodeSealFile((await readSealFile(dir, SEAL_FILE))!)
      const chunks = packChunks(sortEntries([...sealEntries(file), { name: 'ghost', lastSeq: 3 }]))
      await writeSealFile(dir, SEAL_FILE, encodeSealFile({ ...file, generation: generation ?? file.generation, chunks }))
    }
    let store = await open(dir)
    await withGhost()
    mutate(await store.open('name-001', 'pncounter'), new Prng(1), 'x')
    await store.flush()
    const written = (await store.names()).find((n) => n.name === 'name-001')!.lastSeq
    await store.close()
    let sealed = await sealedSeqs(dir)
    assert.equal(sealed.names.get('ghost'), 3, 'the names not written since the open come from the file')
    assert.equal(sealed.names.get('name-001'), written, 'a name written since the open is read again')
    assert.equal(sealed.names.size, NAMES + 1)

    // A file of another generation than the one the open saw says nothing about the store: every name is listed.
    store = await open(dir)
    await withGhost(1)
    await store.close()
    sealed = await sealedSeqs(dir)
    assert.equal(sealed.names.has('ghost'), false)
    assert.equal(sealed.names.size, NAMES)
  } finally {
    await remove()
  }
})
