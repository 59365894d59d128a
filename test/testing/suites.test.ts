/**
 * The conformance suites of concord-crdt/testing can fail: each is registered
 * with a recording runner (not node:test: the suites need only a
 * describe/it pair), run against a correct implementation (every test
 * passes) and against one broken on purpose (the test for that property
 * fails, with its own timeout where the broken part never answers).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createReplica } from '../../crdt/registry.ts'
import type { Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import type { Storage } from '../../persistence/storage/storage.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection, Transport } from '../../transports/transport.ts'
import { runCrdtLaws, runStorageTests, runTransportTests, type TestRunner } from '../../testing/index.ts'
import { nativeOp } from '../crdt/native-ops.ts'

/** A runner that only records the tests, then runs them and reports each outcome. */
function recorder(): { runner: TestRunner; run(): Promise<Map<string, string>> } {
  const tests: Array<{ name: string; body: () => Promise<void> }> = []
  const path: string[] = []
  const runner: TestRunner = {
    describe(name, body) {
      path.push(name)
      try {
        body()
      } finally {
        path.pop()
      }
    },
    it(name, body) {
      tests.push({ name: [...path, name].join(' > '), body })
    },
  }
  return {
    runner,
    async run() {
      const outcomes = new Map<string, string>()
      for (const t of tests) {
        try {
          await t.body()
          outcomes.set(t.name, 'pass')
        } catch (error) {
          outcomes.set(t.name, `fail: ${(error as Error).message.split('\n')[0]}`)
        }
      }
      return outcomes
    },
  }
}

const failures = (outcomes: Map<string, string>): string[] => [...outcomes].filter(([, o]) => o !== 'pass').map(([name]) => name.split(' > ').at(-1)!)

/** `storage` with one method replaced. */
function patched<T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      if (key in overrides) return overrides[key as keyof T]
      const value = Reflect.get(object, key, receiver)
      return typeof value === 'function' ? value.bind(object) : value
    },
  })
}

async function storageOutcomes(broken: (storage: Storage) => Storage): Promise<Map<string, string>> {
  const { runner, run } = recorder()
  runStorageTests(
    runner,
    'under test',
    async () => {
      const storage = await openLevelStorage()
      return { storage: broken(storage), teardown: () => storage.close() }
    },
    { timeoutMs: 5_000 },
  )
  return run()
}

test('storage suite: memory-level passes; a storage that iterates out of order, or ignores close or abort, fails that test', async () => {
  const correct = await storageOutcomes((s) => s)
  assert.ok(correct.size >= 9)
  assert.deepEqual(failures(correct), [])

  const reversed = await storageOutcomes((s) =>
    patched(s, {
      keys: (options: Parameters<Storage['keys']>[0]) => s.keys({ ...options, reverse: !options.reverse }),
    }),
  )
  assert.ok(failures(reversed).includes('iterates in path order, segment by segment (property)'), JSON.stringify([...reversed]))

  const neverCloses = await storageOutcomes((s) => patched(s, { close: async () => undefined, closed: false }))
  assert.deepEqual(failures(neverCloses), ['every operation after close rejects with CONCORD_CLOSED; close is idempotent'])

  const ignoresAbort = await storageOutcomes((s) => patched(s, { get: (key: Parameters<Storage['get']>[0]) => s.get(key) }))
  assert.deepEqual(failures(ignoresAbort), ['an aborted signal rejects with CONCORD_ABORTED'])
})

/** A memory transport whose outbound connections lose every 50th frame. */
function lossy(transport: Transport): Transport {
  return patched(transport, {
    dial: async (address: string) => {
      const connection = await transport.dial(address)
      let sent = 0
      return patched(connection, {
        send: async (frame: Uint8Array) => {
          if (++sent % 50 !== 0) await connection.send(frame)
        },
      }) as Connection
    },
  })
}

async function transportOutcomes(wrap: (t: Transport) => Transport): Promise<Map<string, string>> {
  const { runner, run } = recorder()
  runTransportTests(
    runner,
    'under test',
    async () => {
      const network = new Network({ seed: 1, auto: true })
      const server = network.transport('server')
      const address = await server.listen()
      const client = network.transport('client')
      return {
        server,
        address,
        client: wrap(client),
        teardown: async () => {
          await client.stop()
          await server.stop()
        },
      }
    },
    { timeoutMs: 2_000, largeFrameBytes: 64 * 1024, connections: 4 },
  )
  return run()
}

test('transport suite: the memory transport passes; a lossy one fails on its own timeout instead of hanging', async () => {
  const correct = await transportOutcomes((t) => t)
  assert.equal(correct.size, 6)
  assert.deepEqual(failures(correct), [])
  const broken = await transportOutcomes(lossy)
  const failed = [...broken].filter(([, o]) => o !== 'pass')
  assert.ok(
    failed.some(([name, o]) => name.endsWith('frames arrive whole and in order, both ways') && /did not finish within 2000 ms/.test(o)),
    JSON.stringify(failed),
  )
})

test('CRDT law suite: an OR-set passes; one whose applyDelta always reports a change fails idempotence', async () => {
  const run = async (wrap: (r: Replica) => Replica): Promise<Map<string, string>> => {
    const { runner, run: go } = recorder()
    runCrdtLaws(runner, { type: 'orset', create: (id) => wrap(createReplica('orset', { agentId: agentId(id) })), randomOp: nativeOp('orset'), numRuns: 10 })
    return go()
  }
  assert.deepEqual(failures(await run((r) => r)), [])
  const lying = await run((r) =>
    patched(r, {
      applyDelta: (delta: Uint8Array) => {
        r.applyDelta(delta)
        return true
      },
    }),
  )
  assert.ok(failures(lying).includes('join is idempotent'), JSON.stringify([...lying]))
})
