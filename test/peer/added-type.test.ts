/**
 * The recipe of docs/adding-a-type.md, followed by a test: a max-register
 * (the greatest number written wins) is defined in this one file (core,
 * store codec, view, replica class, its opener and ORMap accessor
 * declarations) and added to the running catalog with `extendCatalog`, the
 * test-time stand-in for its one catalog line. Then it is opened through the
 * peer's typed opener and the store (real LevelDB folders), used as an
 * ORMap field, synced between two peers over the simulated network, and
 * read back after a restart from the folder.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { catalogEntry, extendCatalog, isKnownType, type ReplicaType } from '../../crdt/catalog.ts'
import { CausalContext } from '../../crdt/causal/causal-context.ts'
import { DotFun } from '../../crdt/causal/dot-store.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../../crdt/errors.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { ReplicaOptions } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { CausalReplica } from '../../crdt/types/causal-replica.ts'
import { defineNativeType } from '../../crdt/types/define-native-type.ts'
import type { DotAllocator } from '../../crdt/types/dot-allocator.ts'
import type { NativeTypeDef, ValueCodec } from '../../crdt/types/native-type.ts'
import type { CausalState } from '../../crdt/types/state-codec.ts'
import { View } from '../../crdt/types/view.ts'
import type { Peer } from '../../peer/index.ts'
import { createTestPeer } from '../../testing/index.ts'
import { Network } from '../../transports/memory/index.ts'
import type { Connection } from '../../transports/transport.ts'

// ------------------------------------------------- the type's one file

type MaxStore = DotFun<number>

/** The greatest number written (0 before the first write). */
function maxValue(store: MaxStore): number {
  let max = 0
  for (const e of store.entries) max = Math.max(max, e.value)
  return max
}

/** Delta writing `n`, superseding what was observed; null when `n` is not above the value. */
function maxWrite(store: MaxStore, alloc: DotAllocator, n: number): CausalState<MaxStore> | null {
  if (!Number.isSafeInteger(n) || n < 1) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'max-register: a positive safe integer')
  if (n <= maxValue(store)) return null
  const d = alloc.next()
  return { store: new DotFun([{ dot: d, value: n }]), ctx: CausalContext.of([d, ...store.entries.map((e) => e.dot)]) }
}

const maxCodec: ValueCodec<number> = {
  write: (e, v) => {
    e.writeVarUint(v)
  },
  read: (d) => {
    const v = d.readVarUint()
    if (v < 1) throw new DecodeError('max-register: a value is at least 1')
    return v
  },
}

const maxRegisterType: NativeTypeDef<MaxStore, 'max-register'> = defineNativeType({
  tag: 'max-register',
  code: 200,
  spec: { kind: 'fun', values: maxCodec as ValueCodec<unknown> },
  precedence: 100,
  opener: 'maxRegister',
  field: { accessor: 'maxRegister', view: (owner, path) => new MaxRegisterView(owner, path) },
  create: (options) => new MaxRegisterReplica(options),
  empty: () => new DotFun<number>(),
  value: maxValue,
  restore(current, past, alloc) {
    const want = maxValue(past)
    if (want === maxValue(current)) return null
    if (want < maxValue(current)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'max-register: cannot go back to a smaller value')
    return maxWrite(current, alloc, want)
  },
})

class MaxRegisterView extends View {
  /** Writes `n`; false when the value is already at least `n`. */
  offer(n: number): boolean {
    return this.change<MaxStore>((store, alloc) => maxWrite(store, alloc, n))
  }
  value(): number {
    return maxValue(this.store<MaxStore>())
  }
}

class MaxRegisterReplica extends CausalReplica<MaxStore> {
  private readonly view = new MaxRegisterView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(maxRegisterType, options)
  }
  offer(n: number): boolean {
    return this.view.offer(n)
  }
  override value(): number {
    return this.view.value()
  }
}

declare module '../../crdt/catalog.ts' {
  interface TypedOpeners<O> {
    /** A max-register (test type). */
    maxRegister(name: string, options?: O): Promise<MaxRegisterReplica>
  }
}

declare module '../../crdt/types/ormap.ts' {
  interface ORMapFields {
    /** The max-register field `name` (test type). */
    maxRegister(name: string): MaxRegisterView
  }
}

// ------------------------------------------------- the catalog line

extendCatalog(maxRegisterType)
const MAX = 'max-register' as ReplicaType

// ------------------------------------------------- the checks

const dirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'concord-added-type-'))
  dirs.push(dir)
  return dir
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/**
 * Ticks the peers (`tickMs: 0`: the test drives them), runs the network
 * and lets the folders' real I/O finish, round after round, until `condition` holds (a bound on rounds, not on time: failing
 * means it never held).
 */
async function until(network: Network, peers: readonly Peer[], condition: () => boolean, what: string, state: () => string = () => ''): Promise<void> {
  for (let round = 0; round < 2_000; round++) {
    if (condition()) return
    for (const peer of peers) peer.tick(network.now)
    await network.run({ maxTime: network.now + 50 })
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  assert.fail(`never: ${what} ${state()}`)
}

/** Two peers on one simulated network: `b` dials `a`, both attach. */
async function pair(network: Network, dirA: string, dirB: string): Promise<{ a: Peer; b: Peer }> {
  const a = await createTestPeer({ agentId: 'a', dir: dirA, tickMs: 0, sync: { now: () => network.now } })
  const b = await createTestPeer({ agentId: 'b', dir: dirB, tickMs: 0, sync: { now: () => network.now } })
  await network.transport('a').listen()
  network.transport('a').events.on('connection', (connection) => a.attach(connection))
  let dialed: Connection | undefined
  // Attached as soon as the dial resolves, before the network runs on (a's HELLO is on its way).
  void network
    .transport('b')
    .dial('memory://a')
    .then((connection) => {
      dialed = connection
      b.attach(connection)
    })
  await until(network, [a, b], () => dialed !== undefined, 'the dial connects')
  return { a, b }
}

describe('a type added through the catalog (docs/adding-a-type.md)', () => {
  it('is known to every layer once added: registry, protocol, a second add of it is refused', () => {
    assert.ok(isKnownType('max-register'))
    assert.equal(catalogEntry('max-register'), maxRegisterType)
    const r = createReplica(MAX, { agentId: agentId('x') }) as MaxRegisterReplica
    assert.ok(r instanceof MaxRegisterReplica)
    assert.equal(r.offer(3), true)
    assert.equal(r.offer(2), false, 'below the value: nothing to do')
    const copy = createReplica(MAX, { agentId: agentId('y'), snapshot: r.snapshot() })
    assert.equal(copy.value(), 3)
    assert.throws(() => extendCatalog(maxRegisterType), /listed twice/)
  })

  it('opens through the peer and the store, nests in an ORMap, syncs between two peers and survives a restart', async () => {
    const network = new Network({ seed: 14 })
    const dirA = tempDir()
    const dirB = tempDir()
    const { a, b } = await pair(network, dirA, dirB)

    const topA = await a.maxRegister('top')
    const mapA = await a.map('scores')
    const topB = await b.maxRegister('top')
    assert.equal(topA.type, 'max-register')
    assert.ok(topA.offer(5))
    assert.ok(topB.offer(9))
    assert.ok(mapA.maxRegister('best').offer(7))
    await a.flush()
    await b.flush()
    const mapB = await b.map('scores')
    await until(
      network,
      [a, b],
      () => topA.value() === 9 && topB.value() === 9 && mapB.maxRegister('best').value() === 7,
      'both peers hold 9 and the field',
      () => JSON.stringify([topA.value(), topB.value(), mapB.value(), a.stats().totals.framesIn, b.stats().totals.framesIn]),
    )

    assert.equal(topA.value(), 9)
    assert.equal(topB.value(), 9)
    assert.equal(mapB.maxRegister('best').value(), 7, 'the field synced')
    assert.deepEqual(mapB.value(), { best: 7 })
    assert.deepEqual(topA.version(), topB.version())
    assert.equal((await a.store.names()).find((info) => info.name === 'top')?.type, 'max-register')

    await a.close()
    await b.close()
    const again = await createTestPeer({ agentId: 'a', dir: dirA, tickMs: 0 })
    try {
      assert.equal((await again.maxRegister('top')).value(), 9, 'read back from the LevelDB folder')
      assert.equal((await again.map('scores')).maxRegister('best').value(), 7)
      await assert.rejects(again.counter('top'), (error: unknown) => error instanceof ConcordError && error.code === ErrorCodes.TYPE_MISMATCH)
    } finally {
      await again.close()
    }
  })
})
