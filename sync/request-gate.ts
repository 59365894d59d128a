/**
 * The rate of a remote's expensive requests: REQUEST (answered with our
 * VERSIONS, which lists every name) and VERSIONS (answered with what the
 * remote lacks, a delta per name). Each costs work in proportion to the
 * names held, so one peer that sends them in a loop could otherwise take
 * the event loop from every other. A token bucket lets `burst` through at
 * once, then `perSecond`; one beyond it waits (a newer one of the same kind
 * replaces it: answering the newest is answering both) and is served when
 * the bucket refills. Pure (time is passed in), no timers: the session
 * serves what waits on later frames and on its tick.
 */
import type { VersionEntry } from './messages.ts'
import type { SessionStats } from './session-types.ts'
import { TokenBucket } from './token-bucket.ts'

/** Settings of a {@link RequestGate} (`SessionOptions.requestRate`). */
export interface RequestRate {
  readonly perSecond: number
  /** Requests let through at once (default 4 x `perSecond`). */
  readonly burst?: number | undefined
}

/** The default: 4 expensive requests per second, 16 at once. */
export const DEFAULT_REQUEST_RATE: RequestRate = { perSecond: 4, burst: 16 }

/** What a {@link RequestGate} serves requests with: the session's anti-entropy. */
export interface RequestServer {
  readonly stats: SessionStats
  /** Whether our VERSIONS is being built (a REQUEST now is answered by it). */
  building(): boolean
  sendVersions(): void
  /** Answers a VERSIONS, in order with the messages being handled. */
  answer(entries: readonly VersionEntry[]): void
}

/** Expensive requests of one remote, and those waiting for the rate. */
export class RequestGate {
  private readonly bucket: TokenBucket
  /** A REQUEST waits: our VERSIONS is due. */
  private versionsWaiting = false
  /** The newest VERSIONS waiting for its answer. */
  private answerWaiting: readonly VersionEntry[] | undefined

  constructor(rate: RequestRate, now: number) {
    this.bucket = new TokenBucket(rate.perSecond, rate.burst ?? 4 * rate.perSecond, now)
  }

  /** Whether anything waits. */
  get waiting(): boolean {
    return this.versionsWaiting || this.answerWaiting !== undefined
  }

  /** A REQUEST of the remote: a VERSIONS being built answers it; else one now, within the rate, or later. */
  onRequest(now: number, server: RequestServer): void {
    if (server.building()) server.stats.coalescedRequests++
    else if (this.request(now)) server.sendVersions()
    else server.stats.deferredRequests++
  }

  /** A VERSIONS of the remote: true to answer it now, else it waits (counted). */
  onVersions(entries: readonly VersionEntry[], now: number, server: RequestServer): boolean {
    if (this.versions(entries, now)) return true
    server.stats.deferredRequests++
    return false
  }

  /** Serves what waits, as far as the rate allows now. */
  serve(now: number, server: RequestServer): void {
    if (server.building()) this.versionsSent()
    const { sendVersions, answer } = this.release(now)
    if (sendVersions) server.sendVersions()
    if (answer) server.answer(answer)
  }

  /**
   * The first RANGES of a remote's reconciliation (the answer takes a
   * snapshot of every name): true to serve it now; false drops it (the
   * remote repeats after its resync timeout, with a new reconciliation).
   */
  reconciliation(now: number): boolean {
    return this.bucket.tryTake(1, now)
  }

  /** A REQUEST: true to send our VERSIONS now, false when it waits. */
  request(now: number): boolean {
    if (this.bucket.tryTake(1, now)) return true
    this.versionsWaiting = true
    return false
  }

  /** A VERSIONS: true to answer it now, false when it waits (replacing any that waited). */
  versions(entries: readonly VersionEntry[], now: number): boolean {
    if (this.answerWaiting === undefined && this.bucket.tryTake(1, now)) return true
    this.answerWaiting = entries
    return false
  }

  /** Our VERSIONS went out for another reason: a waiting REQUEST is answered by it. */
  versionsSent(): void {
    this.versionsWaiting = false
  }

  /**
   * What the bucket lets through of what waits, oldest kind first: whether
   * our VERSIONS is due, and the VERSIONS to answer (if any).
   */
  release(now: number): { readonly sendVersions: boolean; readonly answer?: readonly VersionEntry[] } {
    let sendVersions = false
    if (this.versionsWaiting && this.bucket.tryTake(1, now)) {
      this.versionsWaiting = false
      sendVersions = true
    }
    let answer: readonly VersionEntry[] | undefined
    if (this.answerWaiting !== undefined && this.bucket.tryTake(1, now)) {
      answer = this.answerWaiting
      this.answerWaiting = undefined
    }
    return { sendVersions, answer }
  }
}
