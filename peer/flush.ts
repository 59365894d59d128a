/**
 * `Peer.flush()`: wait until everything written before the call is durable
 * here and, with `acks: n`, persisted by at least `n` connected peers, within
 * a timeout.
 */
import type { Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { Store } from '../persistence/store.ts'
import type { SyncSession } from '../sync/index.ts'

/** Which peers acknowledged a `flush({ acks })` so far. */
export interface FlushProgress {
  /** Peers needed (`acks`). */
  readonly needed: number
  /** Agent ids that persisted everything written before the call. */
  readonly acked: readonly string[]
  /** Connected agent ids still to acknowledge. */
  readonly waiting: readonly string[]
}

/** Options of {@link Peer.flush}. */
export interface FlushOptions {
  /** Also wait until this many peers have persisted everything written before the call (default 0). */
  readonly acks?: number | undefined
  /**
   * Give up after this many ms with `CONCORD_TIMEOUT` (a {@link FlushTimeoutError}
   * listing who acknowledged), default 30 000. With `acks` and no peer
   * connected, the flush waits that long for peers to connect.
   */
  readonly timeoutMs?: number | undefined
  /** Called when a peer acknowledges and when a newly connected peer is waited for. */
  readonly onProgress?: ((progress: FlushProgress) => void) | undefined
  readonly signal?: AbortSignal | undefined
}

/** Default of {@link FlushOptions.timeoutMs}. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 30_000

/** A `flush({ acks })` that timed out (`CONCORD_TIMEOUT`): who acknowledged, who did not. */
export class FlushTimeoutError extends ConcordError {
  constructor(
    readonly progress: FlushProgress,
    timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      ErrorCodes.TIMEOUT,
      `flush: acknowledged by ${progress.acked.length} of the ${progress.needed} peer(s) needed within ${timeoutMs} ms (${describeProgress(progress)})`,
      options,
    )
    this.name = 'FlushTimeoutError'
  }

  /** Agent ids that acknowledged. */
  get acked(): readonly string[] {
    return this.progress.acked
  }

  /** Connected agent ids that had not acknowledged. */
  get waiting(): readonly string[] {
    return this.progress.waiting
  }
}

function describeProgress(progress: FlushProgress): string {
  const parts: string[] = []
  if (progress.acked.length > 0) parts.push(`acked: ${progress.acked.join(', ')}`)
  if (progress.waiting.length > 0) parts.push(`not yet: ${progress.waiting.join(', ')}`)
  if (progress.acked.length === 0 && progress.waiting.length === 0) parts.push('no peer was connected')
  else if (progress.acked.length + progress.waiting.length < progress.needed)
    parts.push(`only ${progress.acked.length + progress.waiting.length} peer(s) connected`)
  return parts.join('; ')
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
 * Resolves when the store is durable and, with `acks: n`, `n` distinct
 * peers acknowledged it.
 * @throws ConcordError `CONCORD_ABORTED` (the signal), `CONCORD_TIMEOUT`
 * ({@link FlushTimeoutError}), `CONCORD_INVALID_ARGUMENT`.
 */
export async function flushWithAcks(context: FlushContext, options: FlushOptions = {}): Promise<void> {
  const acks = options.acks ?? 0
  const timeoutMs = options.timeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS
  if (!Number.isSafeInteger(acks) || acks < 0)
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `flush: acks must be a whole number >= 0, got ${String(acks)}`)
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0))
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `flush: timeoutMs must be a number of ms > 0, got ${String(timeoutMs)}`)
  const controller = new AbortController()
  const onAbort = () => controller.abort()
  options.signal?.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => controller.abort(), timeoutMs)
  const tracker = new AckTracker(acks, options.onProgress)
  try {
    await context.store.flush({ signal: controller.signal })
    if (acks > 0) await waitForAcks(context, tracker, controller.signal)
  } catch (error) {
    if (options.signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'flush aborted', { cause: error })
    if (controller.signal.aborted) throw new FlushTimeoutError(tracker.progress(), timeoutMs, { cause: error })
    throw error
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', onAbort)
  }
}

/** Acknowledgements by agent id (a peer with two sessions counts once). */
class AckTracker {
  private readonly state = new Map<string, 'acked' | 'waiting'>()

  constructor(
    readonly needed: number,
    private readonly onProgress?: (progress: FlushProgress) => void,
  ) {}

  get count(): number {
    let count = 0
    for (const value of this.state.values()) if (value === 'acked') count++
    return count
  }

  waiting(peer: string): void {
    if (this.state.has(peer)) return
    this.state.set(peer, 'waiting')
    this.report()
  }

  acked(peer: string): void {
    if (this.state.get(peer) === 'acked') return
    this.state.set(peer, 'acked')
    this.report()
  }

  gone(peer: string): void {
    if (this.state.get(peer) === 'waiting') this.state.delete(peer)
  }

  progress(): FlushProgress {
    const acked: string[] = []
    const waiting: string[] = []
    for (const [peer, value] of this.state) (value === 'acked' ? acked : waiting).push(peer)
    return { needed: this.needed, acked, waiting }
  }

  private report(): void {
    if (!this.onProgress) return
    try {
      this.onProgress(this.progress())
    } catch {
      // a throwing progress callback never breaks the flush
    }
  }
}

async function waitForAcks(context: FlushContext, tracker: AckTracker, signal: AbortSignal): Promise<void> {
  // Every session open now must acknowledge what it was given; sessions that
  // open later count once their first anti-entropy is acknowledged.
  await new Promise<void>((resolve, reject) => {
    const pending = new Set<SyncSession>()
    const onAbort = () => cleanup(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
    const offConnected = context.onPeerConnected(() => {
      for (const session of context.sessions) if (session.state === 'open' && !pending.has(session)) watch(session)
    })
    let done = false
    const cleanup = (error?: Error) => {
      if (done) return
      done = true
      offConnected()
      signal.removeEventListener('abort', onAbort)
      if (error) reject(error)
      else resolve()
    }
    const watch = (session: SyncSession) => {
      pending.add(session)
      const peer = session.remoteAgentId ?? `session ${pending.size}`
      tracker.waiting(peer)
      // Live commits may have gone by gossip: a fresh anti-entropy round first, so the ack covers them.
      if (context.needsPush(session)) session.push()
      session.whenAcked({ signal }).then(
        () => {
          tracker.acked(peer)
          if (tracker.count >= tracker.needed) cleanup()
        },
        (error) => {
          if (signal.aborted) cleanup(isConcordError(error) ? error : new ConcordError(ErrorCodes.ABORTED, 'aborted'))
          else tracker.gone(peer)
        },
      )
    }
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    for (const session of context.sessions) if (session.state === 'open') watch(session)
  })
}
