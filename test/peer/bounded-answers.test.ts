/**
 * Bounded answers (issue 15), LevelDB peers over WebSocket on 127.0.0.1: a
 * first sync sends the names that never shared a unit in small
 * INDEPENDENT bundles, each applied and made durable on its own, so the
 * receiver holds one bundle's names at a time (its cache stays bounded,
 * not by how many names there are); the names of a transaction stay in
 * one bundle, also after the sender restarted (its joint names are kept
 * on disk); a peer without INDEPENDENT (as an older version) syncs either
 * way, and what it sends is kept together where it lands.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createPeer, type Peer } from '../../peer/index.ts'
import { INDEPENDENT_BUNDLE_NAMES } from '../../sync/answer-bundles.ts'
import { SLICE_NAMES } from '../../sync/held-slices.ts'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'

const CACHE = 32
const nameOf = (i: number): string => `task/${String(i).padStart(5, '0')}`
const options = (independent = true) => ({ cacheSize: CACHE, durability: { mode: 'async' as const, rpoMs: 50 }, sync: { independent } })

/** `a` listens, `b` connects to it; resolves once `b` finished its first anti-entropy. */
async function firstSync(a: Peer, b: Peer): Promise<void> {
  const { url } = (await a.listen()) as { url: string }
  const done = new Promise<void>((resolve) => b.once('peer-synced', () => resolve()))
  await b.connect(url)
  await done
}

/** The units a peer's store commits that came from a remote: the names of each. */
function remoteUnits(peer: Peer): string[][] {
  const units: string[][] = []
  peer.store.events.on('committed', ({ origin, records }) => {
    if (origin !== undefined) units.push([...new Set(records.map((record) => record.name))])
  })
  return units
}

test('a first sync of 3,000 counters into an empty peer comes in bundles of at most 128 names applied one by one (the receiver holds a bundle at a time, not every name), hydrating nothing', async () => {
  const dir = await tempDir('concord-bounded-first-')
  const peers: Peer[] = []
  try {
    const a = await createPeer({ agentId: 'a', dir: join(dir.path, 'a'), ...options() })
    peers.push(a)
    const NAMES = 3000
    for (let i = 0; i < NAMES; i++) (await a.counter(nameOf(i))).increment(i + 1)
    await a.flush()
    const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options() })
    peers.push(b)
    const units = remoteUnits(b)
    const hydrationsBefore = b.store.hydrations
    await firstSync(a, b)
    const hydrated = b.store.hydrations - hydrationsBefore
    assert.equal((await b.store.listNames()).length, NAMES)
    for (const i of [0, 1234, NAMES - 1]) assert.equal((await b.counter(nameOf(i))).value(), i + 1)
    assert.ok(units.length >= NAMES / INDEPENDENT_BUNDLE_NAMES, `${units.length} units for ${NAMES} names`)
    assert.ok(
      units.every((unit) => unit.length <= INDEPENDENT_BUNDLE_NAMES),
      `a unit of ${Math.max(...units.map((unit) => unit.length))} names`,
    )
    // A commit holds its names in memory until written: no commit held more than a bundle, and no name was read back.
    assert.equal(hydrated, 0, 'the receiver hydrated no stored name during the first sync')
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
})

const STREAMED_NAMES = 2000

/** A sender of STREAMED_NAMES counters (name i holds i + 1) written, closed and opened again in `root`, whose storage reads take `delayMs` a slice. */
async function restartedSender(root: string, delayMs: number): Promise<{ a: Peer; slicesRead: () => number }> {
  const seeded = await createPeer({ agentId: 'a', dir: join(root, 'a'), ...options() })
  for (let start = 0; start < STREAMED_NAMES; start += 500) {
    const replicas = await seeded.openMany(Array.from({ length: 500 }, (_, k) => ({ name: nameOf(start + k), type: 'pncounter' as const })))
    for (const [k, replica] of replicas.entries()) (replica as PNCounterReplica).increment(start + k + 1)
  }
  await seeded.close()
  const a = await createPeer({ agentId: 'a', dir: join(root, 'a'), ...options() })
  let read = 0
  const storedDeltas = a.store.storedDeltas.bind(a.store)
  a.store.storedDeltas = async (wanted, ...rest) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs))
    read++
    return storedDeltas(wanted, ...rest)
  }
  return { a, slicesRead: () => read }
}

test('a first sync streams its answer: the receiver applies the first bundles while the sender still reads the rest from storage', async () => {
  const dir = await tempDir('concord-bounded-stream-')
  const peers: Peer[] = []
  try {
    // Restarted: the answer is read from storage, a slice at a time (each slow here).
    const { a, slicesRead } = await restartedSender(dir.path, 2)
    peers.push(a)
    const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options() })
    peers.push(b)
    let readWhenFirstApplied: number | undefined
    b.store.events.on('committed', ({ origin }) => {
      if (origin !== undefined) readWhenFirstApplied ??= slicesRead()
    })
    await firstSync(a, b)
    const slices = Math.ceil(STREAMED_NAMES / SLICE_NAMES)
    assert.equal(slicesRead(), slices, 'the sender read every slice once')
    assert.ok(
      readWhenFirstApplied !== undefined && readWhenFirstApplied < slices / 2,
      `the first bundle was applied after ${readWhenFirstApplied} of ${slices} slices were read`,
    )
    assert.equal((await b.store.listNames()).length, STREAMED_NAMES)
    for (const i of [0, 999, STREAMED_NAMES - 1]) assert.equal((await b.counter(nameOf(i))).value(), i + 1)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
})

test('acknowledgements are taken while the answer is computed: a receiver with a window of 2 applies more than 2 bundles before the sender read its last slice', async () => {
  const dir = await tempDir('concord-bounded-window-')
  const peers: Peer[] = []
  try {
    // Slow enough that the receiver takes and acknowledges each bundle before the next slice.
    const { a, slicesRead } = await restartedSender(dir.path, 5)
    peers.push(a)
    const slices = Math.ceil(STREAMED_NAMES / SLICE_NAMES)
    // The receiver lets 2 commits be in flight to it (ACKs every commit): the sender's window shuts after 2 bundles until an ACK is taken.
    const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options(), sync: { independent: true, window: 2, ackEvery: 1 } })
    peers.push(b)
    let bundlesBeforeLastSlice = 0
    b.store.events.on('committed', ({ origin }) => {
      if (origin !== undefined && slicesRead() < slices) bundlesBeforeLastSlice++
    })
    await firstSync(a, b)
    assert.equal(slicesRead(), slices)
    // Before, the ACKs waited behind the handler computing the answer: 2 bundles, then nothing until it ended.
    assert.ok(bundlesBeforeLastSlice > 4, `${bundlesBeforeLastSlice} bundles applied before the last of ${slices} slices was read`)
    assert.equal((await b.store.listNames()).length, STREAMED_NAMES)
    for (const i of [0, 1234, STREAMED_NAMES - 1]) assert.equal((await b.counter(nameOf(i))).value(), i + 1)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
})

test('a bundle boundary never splits a transaction: its names arrive in one unit, also after the sender restarted', async () => {
  const dir = await tempDir('concord-bounded-tx-')
  const peers: Peer[] = []
  try {
    const NAMES = 1000
    const transactions = [
      [3, 500, 999],
      [10, 11],
      [250, 750, 251, 0],
    ].map((indexes) => indexes.map(nameOf))
    {
      const a = await createPeer({ agentId: 'a', dir: join(dir.path, 'a'), ...options() })
      for (let i = 0; i < NAMES; i++) (await a.counter(nameOf(i))).increment()
      for (const names of transactions) {
        const counters = await Promise.all(names.map((name) => a.counter(name)))
        await a.transact(() => {
          for (const counter of counters) counter.increment(100)
        })
      }
      await a.close()
    }
    // Reopened: the names it knows were in a transaction are read from its folder.
    const a = await createPeer({ agentId: 'a', dir: join(dir.path, 'a'), ...options() })
    peers.push(a)
    const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options() })
    peers.push(b)
    const units = remoteUnits(b)
    await firstSync(a, b)
    for (const names of transactions) {
      const holding = units.filter((unit) => names.some((name) => unit.includes(name)))
      assert.equal(holding.length, 1, `the names of ${names.join(', ')} came in ${holding.length} units`)
      for (const name of names) assert.ok(holding[0].includes(name), `${name} with the others of its transaction`)
      for (const name of names) assert.ok((await b.counter(name)).value() >= 101, `${name} holds the transaction`)
    }
    assert.ok(units.length > 2, `the other names came apart (${units.length} units)`)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
})

for (const [sender, receiver] of [
  ['old', 'new'],
  ['new', 'old'],
] as const) {
  test(`${sender === 'old' ? 'an' : 'a'} ${sender} sender and ${receiver === 'old' ? 'an' : 'a'} ${receiver} receiver (INDEPENDENT off on the old one) sync a first time, and transactions stay whole`, async () => {
    const dir = await tempDir('concord-bounded-mixed-')
    const peers: Peer[] = []
    try {
      const a = await createPeer({ agentId: 'a', dir: join(dir.path, 'a'), ...options(sender === 'new') })
      peers.push(a)
      const NAMES = 600
      for (let i = 0; i < NAMES; i++) (await a.counter(nameOf(i))).increment(2)
      const joint = [nameOf(1), nameOf(598)]
      const counters = await Promise.all(joint.map((name) => a.counter(name)))
      await a.transact(() => {
        for (const counter of counters) counter.increment(5)
      })
      await a.flush()
      const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options(receiver === 'new') })
      peers.push(b)
      const units = remoteUnits(b)
      await firstSync(a, b)
      assert.equal((await b.store.listNames()).length, NAMES)
      assert.equal((await b.counter(nameOf(300))).value(), 2)
      for (const name of joint) assert.equal((await b.counter(name)).value(), 7)
      assert.equal(units.filter((unit) => joint.some((name) => unit.includes(name))).length, 1, 'the transaction in one unit')
      // Bundles are small either way (an old receiver takes them as TRANSACTIONs).
      assert.ok(units.length > 2, `${units.length} units`)
      // What the receiver took as independent it may split again; a TRANSACTION of several names it keeps together.
      const test = await b.store.jointNames()
      const apart = units.find((unit) => unit.length > 1 && !unit.some((name) => joint.includes(name)))!
      assert.equal(
        apart.every((name) => test(name)),
        sender === 'old' || receiver === 'old',
        'a bundle taken as a TRANSACTION marks its names joint; an INDEPENDENT one does not',
      )
      for (const name of joint) assert.ok(test(name), `${name} is joint on the receiver`)
    } finally {
      await Promise.all(peers.map((peer) => peer.close()))
      await dir.remove()
    }
  })
}
