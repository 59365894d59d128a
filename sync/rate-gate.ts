/**
 * The inbound rate limit of a sync session: frames beyond the rate wait, in
 * arrival order, and are let through as the token bucket refills. Pure (time
 * is passed in), no timers.
 */
import { TokenBucket } from './token-bucket.ts'

/** Settings of an {@link InboundRateGate} (`SessionOptions.rateLimit`). */
export interface RateLimit {
  readonly bytesPerSecond: number
  /** Bytes that may arrive at once before the rate applies (default: one second's worth). */
  readonly burstBytes?: number
  /** Bytes allowed to wait (default: 4 x burst). */
  readonly maxDeferredBytes?: number
}

/** Holds back inbound frames beyond a byte rate. */
export class InboundRateGate {
  private readonly bucket: TokenBucket
  /** Frames waiting for the rate limit, in arrival order. */
  private readonly waiting: Uint8Array[] = []
  private waitingBytes = 0
  private readonly maxWaiting: number | undefined

  constructor(limit: RateLimit, now: number) {
    this.bucket = new TokenBucket(limit.bytesPerSecond, limit.burstBytes ?? limit.bytesPerSecond, now)
    this.maxWaiting = limit.maxDeferredBytes
  }

  /** Bytes per second let through. */
  get ratePerSecond(): number {
    return this.bucket.ratePerSecond
  }

  /** Bytes of the frames waiting. */
  get deferredBytes(): number {
    return this.waitingBytes
  }

  /** Whether more bytes wait than allowed (the remote is then refused with `limit`). */
  get overLimit(): boolean {
    return this.waitingBytes > (this.maxWaiting ?? 4 * this.bucket.burst)
  }

  /**
   * Whether `frame` may be processed now: only if nothing waits before it
   * and the bucket has its bytes. Otherwise it is kept, to wait its turn.
   */
  admit(frame: Uint8Array, now: number): boolean {
    if (this.waiting.length === 0 && this.bucket.tryTake(frame.length, now)) return true
    this.waiting.push(frame)
    this.waitingBytes += frame.length
    return false
  }

  /** Hands waiting frames to `process`, as far as the bucket allows and while `active()`. */
  drain(now: number, active: () => boolean, process: (frame: Uint8Array) => void): void {
    while (this.waiting.length > 0 && active() && this.bucket.tryTake(this.waiting[0].length, now)) {
      const frame = this.waiting.shift()!
      this.waitingBytes -= frame.length
      process(frame)
    }
  }
}
