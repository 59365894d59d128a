/**
 * `Peer.flush()`: wait until everything written before the call is durable
 * here and, with `acks: n`, persisted by at least `n` connected peers, within
 * a timeout.
 */
import type { Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { Store } from '../persistence/store.ts'
import type { SyncSession } from '../sync/index.ts'

/** Options of {@link Peer.flush}. */
export interface FlushOptions {
  /** Also wait until this many peers have persisted everything written before the call (default 0). */
  readonly acks?: number
  /** Give up after this many ms with `CONCORD_TIMEOUT` (default 30000). */
  readonly timeoutMs?: number
  readonly signal?: AbortSignal
}

/** What a flush needs from its peer. */
export interface FlushContext {
  readonly store: Store
  /** The peer's current sessions. */
  readonly sessions: Iterable<SyncSession>
  /** Subscribes to the peer's `peer-connected` event. */
  readonly onPeerConnected: (listener: () => void) => Unsubscribe
  /** Whether a session needs a fresh anti-entropy round before its ack covers everything (live commits went by gossip). */
  readonly needsPush: (session: SyncSession) => boolean
}

/**
 * Resolves when the store is durable and, with `acks: n`, `n` sessions
 * acknowledged it.
 * @throws ConcordError `CONCORD_ABORTED` (the signal), `CONCORD_TIMEOUT`.
 */
export async function flushWithAcks(context: FlushContext, options: FlushOptions = {}): Promise<void> {
  const acks = options.acks ?? 0
  const timeoutMs = options.timeoutMs ?? 30_000
  const controller = new AbortController()
  const onAbort = () => controller.abort()
  options.signal?.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => controller.abort(), timeoutMs)
  try {
    await context.store.flush({ signal: controller.signal })
    if (acks > 0) await waitForAcks(context, acks, controller.signal)
  } catch (error) {
    if (options.signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'flush aborted', { cause: error })
    if (controller.signal.aborted) throw new ConcordError(ErrorCodes.TIMEOUT, `flush: not acknowledged by ${acks} peer(s) within ${timeoutMs} ms`, { cause: error })
    throw error
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', onAbort)
  }
}

async function waitForAcks(context: FlushContext, count: number, signal: AbortSignal): Promise<void> {
  // Every session open now must acknowledge what it was given; sessions that
  // open later count once their first anti-entropy is acknowledged.
  let acked = 0
  await new Promise<void>((resolve, reject) => {
    const pending = new Set<SyncSession>()
    const onAbort = () => cleanup(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
    const offConnected = context.onPeerConnected(() => {
      for (const session of context.sessions) if (session.state === 'open' && !pending.has(session)) watch(session)
    })
    const cleanup = (error?: Error) => {
      offConnected()
      signal.removeEventListener('abort', onAbort)
      if (error) reject(error)
      else resolve()
    }
    const watch = (session: SyncSession) => {
      pending.add(session)
      // Live commits may have gone by gossip: a fresh anti-entropy round first, so the ack covers them.
      if (context.needsPush(session)) session.push()
      session.whenAcked({ signal }).then(() => {
        if (++acked >= count) cleanup()
      }, (error) => {
        if (signal.aborted) cleanup(isConcordError(error) ? error : new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      })
    }
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    for (const session of context.sessions) if (session.state === 'open') watch(session)
  })
}
