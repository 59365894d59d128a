import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createPeer, FlushTimeoutError, type FlushProgress, type Peer } from '../../peer/index.ts'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { GatedStorage } from '../helpers/held-storage.ts'

async function withPeers(fn: (track: (peer: Peer) => Peer) => Promise<void>): Promise<void> {
  const peers: Peer[] = []
  try {
    await fn((peer) => {
      peers.push(peer)
      return peer
    })
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
}

test('flush({ acks }) with no peer connected times out naming that; the error lists who acknowledged', () =>
  withPeers(async (track) => {
    const lonely = track(await createPeer({ agentId: 'lonely' }))
    ;(await lonely.counter('c')).increment()
    const error = await lonely.flush({ acks: 1, timeoutMs: 200 }).then(
      () => undefined,
      (e: unknown) => e,
    )
    assert.ok(error instanceof FlushTimeoutError)
    assert.ok(isConcordError(error, ErrorCodes.TIMEOUT))
    assert.match(error.message, /acknowledged by 0 of the 1 peer\(s\) needed within 200 ms \(no peer was connected\)/)
    assert.deepEqual([error.acked, error.waiting], [[], []])
    await assert.rejects(lonely.flush({ acks: -1 }), (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(lonely.flush({ acks: 1.5 }), (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT))
    await assert.rejects(lonely.flush({ acks: 1, timeoutMs: 0 }), (e) => isConcordError(e, ErrorCodes.INVALID_ARGUMENT))
  }))

test('flush({ acks, onProgress }) reports each acknowledgement; a timeout says who acked and who did not', () =>
  withPeers(async (track) => {
    const alice = track(await createPeer({ agentId: 'alice' }))
    const stuckStorage = new GatedStorage(await openLevelStorage())
    const stuck = track(await createPeer({ agentId: 'stuck', storage: stuckStorage }))
    const writer = track(await createPeer({ agentId: 'writer' }))
    await writer.connect((await alice.listen()).url)
    await writer.connect((await stuck.listen()).url)
    const counter = await writer.counter('c')
    counter.increment()
    await writer.flush({ acks: 2 })

    // stuck stops persisting: it never acknowledges what comes next.
    stuckStorage.hold()
    counter.increment(5)
    const progress: FlushProgress[] = []
    const error = await writer.flush({ acks: 2, timeoutMs: 500, onProgress: (p) => progress.push(p) }).then(
      () => undefined,
      (e: unknown) => e,
    )
    assert.ok(error instanceof FlushTimeoutError, String(error))
    assert.deepEqual(error.acked, ['alice'])
    assert.deepEqual(error.waiting, ['stuck'])
    assert.match(error.message, /acknowledged by 1 of the 2 peer\(s\) needed within 500 ms \(acked: alice; not yet: stuck\)/)
    assert.deepEqual(progress.at(-1), { needed: 2, acked: ['alice'], waiting: ['stuck'] })
    assert.ok(
      progress.some((p) => p.acked.length === 0 && p.waiting.length === 2),
      'the peers waited for are reported before any ack',
    )

    // acks: 1 is met by alice alone; once stuck persists again, acks: 2 resolves.
    await writer.flush({ acks: 1, timeoutMs: 10_000 })
    stuckStorage.release()
    const last: FlushProgress[] = []
    await writer.flush({ acks: 2, timeoutMs: 10_000, onProgress: (p) => last.push(p) })
    assert.deepEqual(last.at(-1)?.acked.slice().sort(), ['alice', 'stuck'])
  }))

test('flush({ acks }) counts a peer that connects while it waits', () =>
  withPeers(async (track) => {
    const server = track(await createPeer({ agentId: 'server' }))
    const { url } = await server.listen()
    const writer = track(await createPeer({ agentId: 'writer' }))
    ;(await writer.counter('c')).increment(3)
    const progress: FlushProgress[] = []
    const flushed = writer.flush({ acks: 1, timeoutMs: 15_000, onProgress: (p) => progress.push(p) })
    await writer.connect(url)
    await flushed
    assert.deepEqual(progress.at(-1), { needed: 1, acked: ['server'], waiting: [] })
    assert.equal((await server.counter('c')).value(), 3)
  }))
