/**
 * The storage conformance suite: every {@link Storage} implementation must
 * pass it (docs/design-sketch.md, convention 3), ours (classic-level, memory-level) and a
 * third party's, under any test runner:
 *
 * ```ts
 * import { describe, it } from 'node:test'
 * import { runStorageTests } from 'concord-crdt/testing'
 *
 * runStorageTests({ describe, it }, 'my storage', async () => {
 *   const storage = await openMyStorage()
 *   return { storage, teardown: () => storage.close() }
 * })
 * ```
 *
 * Checked: get/put/del and batches in order; iteration in path order
 * (segment by segment, UTF-8 bytes, a prefix before its extensions), prefix
 * ranges, bounds, reverse and limit; an iteration reads the snapshot taken
 * when it starts; flushed and synced writes survive a reopen (when the setup
 * gives `reopen`); an aborted signal rejects with `CONCORD_ABORTED` and
 * changes nothing; after `close` everything rejects with `CONCORD_CLOSED`.
 * Needs the `fast-check` package (a peer dependency of `concord-crdt/testing`).
 */
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { isConcordError } from '../crdt/errors.ts'
import type { Storage, StorageKey } from '../persistence/storage/storage.ts'
import { DEFAULT_TEST_TIMEOUT_MS, timedTest, type TestRunner } from './runner.ts'

/** A fresh, empty storage for one test, and how to dispose of it. */
export interface StorageSetup {
  /** The storage under test, open and empty. */
  readonly storage: Storage
  /** Closes the storage and opens the same data again (omit if the storage keeps nothing across a close). */
  readonly reopen?: () => Promise<Storage>
  /** Closes whatever is still open and deletes the data (called after every test, pass or fail). */
  readonly teardown: () => Promise<void>
}

/** Options of {@link runStorageTests}. */
export interface StorageTestOptions {
  /** Per-test timeout (default 60 s). */
  readonly timeoutMs?: number
}

const utf8 = new TextEncoder()
const bytes = (text: string): Uint8Array => utf8.encode(text)

/** Reference order: segment by segment, UTF-8 bytes, prefix first. */
function compareKeys(a: StorageKey, b: StorageKey): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = utf8.encode(a[i])
    const y = utf8.encode(b[i])
    const m = Math.min(x.length, y.length)
    for (let j = 0; j < m; j++) if (x[j] !== y[j]) return x[j] - y[j]
    if (x.length !== y.length) return x.length - y.length
  }
  return a.length - b.length
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of iterable) out.push(item)
  return out
}

const segment = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('', '\u0000', '\u0001', '\u0000\u0001', 'a\u0000', '\u00ff', '\uffff', '😀', 'a', 'b'))
const key = fc.array(segment, { minLength: 1, maxLength: 4 })

/**
 * Registers the storage conformance tests for one implementation with
 * `runner`; `setup` is called once per test.
 */
export function runStorageTests(runner: TestRunner, label: string, setup: () => Promise<StorageSetup>, options: StorageTestOptions = {}): void {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS
  const it = (name: string, body: () => Promise<void>): void => timedTest(runner, name, timeoutMs, body)
  runner.describe(`storage conformance: ${label}`, () => {
    const withStorage = (fn: (storage: Storage, harness: StorageSetup) => Promise<void>) => async () => {
      const harness = await setup()
      try {
        await fn(harness.storage, harness)
      } finally {
        await harness.teardown()
      }
    }

    it(
      'get of a missing key is undefined; put/get/del round trip',
      withStorage(async (storage) => {
        assert.equal(await storage.get(['x']), undefined)
        await storage.batch([
          { type: 'put', key: ['x'], value: bytes('one') },
          { type: 'put', key: ['e'], value: new Uint8Array(0) },
        ])
        const value = await storage.get(['x'])
        assert.ok(value instanceof Uint8Array)
        assert.deepEqual([...value!], [...bytes('one')])
        assert.deepEqual([...(await storage.get(['e']))!], [])
        await storage.batch([{ type: 'del', key: ['x'] }])
        assert.equal(await storage.get(['x']), undefined)
        await storage.batch([{ type: 'del', key: ['never-there'] }])
      }),
    )

    it(
      'a batch applies in order',
      withStorage(async (storage) => {
        await storage.batch(
          [
            { type: 'put', key: ['a'], value: bytes('1') },
            { type: 'del', key: ['a'] },
            { type: 'del', key: ['b'] },
            { type: 'put', key: ['b'], value: bytes('2') },
            { type: 'put', key: ['c'], value: bytes('3') },
            { type: 'put', key: ['c'], value: bytes('4') },
          ],
          { sync: true },
        )
        assert.equal(await storage.get(['a']), undefined)
        assert.deepEqual([...(await storage.get(['b']))!], [...bytes('2')])
        assert.deepEqual([...(await storage.get(['c']))!], [...bytes('4')])
      }),
    )

    it(
      'iterates in path order, segment by segment (property)',
      withStorage(async (storage) => {
        await fc.assert(
          fc.asyncProperty(fc.uniqueArray(key, { maxLength: 30, selector: (k) => JSON.stringify(k) }), async (keys) => {
            await storage.batch(keys.map((k, i) => ({ type: 'put' as const, key: ['p', ...k], value: Uint8Array.of(i) })))
            const entries = await collect(storage.iterate({ prefix: ['p'] }))
            const expected = [...keys].sort(compareKeys)
            assert.deepEqual(
              entries.map((e) => e.key.slice(1)),
              expected,
            )
            for (const entry of entries) {
              const index = keys.findIndex((k) => JSON.stringify(k) === JSON.stringify(entry.key.slice(1)))
              assert.deepEqual([...entry.value], [index])
            }
            const reversed = await collect(storage.keys({ prefix: ['p'], reverse: true }))
            assert.deepEqual(
              reversed.map((k) => k.slice(1)),
              [...expected].reverse(),
            )
            await storage.batch(keys.map((k) => ({ type: 'del' as const, key: ['p', ...k] })))
            assert.equal((await collect(storage.keys({ prefix: ['p'] }))).length, 0)
          }),
          { seed: 4242, numRuns: 40 },
        )
      }),
    )

    it(
      'a prefix range holds only keys strictly under it',
      withStorage(async (storage) => {
        const keys: StorageKey[] = [['a'], ['a', ''], ['a', 'x'], ['a', 'x', 'y'], ['ab'], ['ab', 'x'], ['a\u0000'], ['b'], ['']]
        await storage.batch(keys.map((k) => ({ type: 'put' as const, key: k, value: bytes(k.join('/')) })))
        assert.deepEqual(await collect(storage.keys({ prefix: ['a'] })), [
          ['a', ''],
          ['a', 'x'],
          ['a', 'x', 'y'],
        ])
        assert.deepEqual(await collect(storage.keys({ prefix: ['a', 'x'] })), [['a', 'x', 'y']])
        assert.deepEqual(await collect(storage.keys({ prefix: ['zz'] })), [])
        const all = await collect(storage.keys({ prefix: [] }))
        assert.deepEqual(all, [...keys].sort(compareKeys))
      }),
    )

    it(
      'bounds, reverse and limit',
      withStorage(async (storage) => {
        const seqs = Array.from({ length: 20 }, (_, i) => String(i).padStart(3, '0'))
        await storage.batch(seqs.map((s) => ({ type: 'put' as const, key: ['l', 'n', s], value: bytes(s) })))
        await storage.batch([{ type: 'put', key: ['l', 'o', '000'], value: bytes('other') }])
        const range = async (options: object) => (await collect(storage.keys({ prefix: ['l', 'n'], ...options }))).map((k) => k[2])
        assert.deepEqual(await range({ gt: ['l', 'n', '005'], lte: ['l', 'n', '008'] }), ['006', '007', '008'])
        assert.deepEqual(await range({ gte: ['l', 'n', '005'], lt: ['l', 'n', '008'] }), ['005', '006', '007'])
        assert.deepEqual(await range({ gte: ['l', 'n', '017'] }), ['017', '018', '019'])
        assert.deepEqual(await range({ lt: ['l', 'n', '002'] }), ['000', '001'])
        assert.deepEqual(await range({ reverse: true, limit: 2 }), ['019', '018'])
        assert.deepEqual(await range({ reverse: true, lte: ['l', 'n', '010'], limit: 3 }), ['010', '009', '008'])
        assert.deepEqual(await range({ limit: 0 }), [])
        assert.deepEqual(await range({ gt: ['l', 'n', '019'] }), [])
        assert.deepEqual(await range({ gte: ['l'], lt: ['m'] }), seqs) // wider bounds than the prefix: the prefix wins
        const values = await collect(storage.iterate({ prefix: ['l', 'n'], gte: ['l', 'n', '003'], limit: 1 }))
        assert.deepEqual(
          values.map((e) => [...e.value]),
          [[...bytes('003')]],
        )
      }),
    )

    it(
      'a limit holds across the pages an adapter reads in',
      withStorage(async (storage) => {
        const seqs = Array.from({ length: 700 }, (_, i) => String(i).padStart(4, '0'))
        await storage.batch(seqs.map((s) => ({ type: 'put' as const, key: ['p', s], value: bytes(s) })))
        const range = async (options: object) => (await collect(storage.iterate({ prefix: ['p'], ...options }))).map((e) => e.key[1])
        for (const limit of [1, 255, 256, 257, 300, 512, 513, 699, 700, 701]) {
          assert.deepEqual(await range({ limit }), seqs.slice(0, limit), `limit ${limit}`)
          assert.deepEqual(await range({ limit, reverse: true }), [...seqs].reverse().slice(0, limit), `limit ${limit}, reverse`)
        }
        assert.deepEqual(await range({ gt: ['p', '0100'], limit: 300 }), seqs.slice(101, 401))
        assert.deepEqual((await collect(storage.keys({ prefix: ['p'], limit: 257 }))).length, 257)
      }),
    )

    it(
      'an iteration reads the snapshot taken when it starts',
      withStorage(async (storage) => {
        const n = 600
        await storage.batch(Array.from({ length: n }, (_, i) => ({ type: 'put' as const, key: ['s', String(i).padStart(4, '0')], value: bytes('v') })))
        let seen = 0
        let wrote = false
        for await (const entry of storage.iterate({ prefix: ['s'] })) {
          seen++
          if (!wrote) {
            wrote = true
            await storage.batch([
              { type: 'put', key: ['s', '9999'], value: bytes('late') },
              { type: 'del', key: ['s', '0599'] },
            ])
          }
          assert.notEqual(entry.key[1], '9999')
        }
        assert.equal(seen, n)
        assert.equal((await collect(storage.keys({ prefix: ['s'] }))).length, n)
      }),
    )

    it(
      'flush and sync batches resolve; values survive a reopen',
      withStorage(async (storage, harness) => {
        await storage.batch([{ type: 'put', key: ['d', '1'], value: bytes('durable') }], { sync: true })
        await storage.batch([{ type: 'put', key: ['d', '2'], value: bytes('later') }])
        await storage.flush()
        await storage.batch([], { sync: true })
        if (!harness.reopen) return
        const again = await harness.reopen()
        assert.deepEqual([...(await again.get(['d', '1']))!], [...bytes('durable')])
        assert.deepEqual([...(await again.get(['d', '2']))!], [...bytes('later')])
        assert.deepEqual(await collect(again.keys({ prefix: ['d'] })), [
          ['d', '1'],
          ['d', '2'],
        ])
      }),
    )

    it(
      'an aborted signal rejects with CONCORD_ABORTED',
      withStorage(async (storage) => {
        const signal = AbortSignal.abort()
        await assert.rejects(storage.get(['x'], { signal }), (e) => isConcordError(e, 'CONCORD_ABORTED'))
        await assert.rejects(storage.batch([{ type: 'put', key: ['x'], value: bytes('1') }], { signal }), (e) => isConcordError(e, 'CONCORD_ABORTED'))
        await assert.rejects(collect(storage.iterate({ prefix: [], signal })), (e) => isConcordError(e, 'CONCORD_ABORTED'))
        assert.equal(await storage.get(['x']), undefined)
      }),
    )

    it(
      'every operation after close rejects with CONCORD_CLOSED; close is idempotent',
      withStorage(async (storage) => {
        await storage.close()
        await storage.close()
        assert.equal(storage.closed, true)
        await assert.rejects(storage.get(['x']), (e) => isConcordError(e, 'CONCORD_CLOSED'))
        await assert.rejects(storage.batch([{ type: 'put', key: ['x'], value: bytes('1') }]), (e) => isConcordError(e, 'CONCORD_CLOSED'))
        await assert.rejects(storage.flush(), (e) => isConcordError(e, 'CONCORD_CLOSED'))
        await assert.rejects(collect(storage.keys({ prefix: [] })), (e) => isConcordError(e, 'CONCORD_CLOSED'))
      }),
    )
  })
}
