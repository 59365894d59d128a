/**
 * A token bucket: `ratePerSecond` tokens flow in, up to `burst` are kept.
 * Pure (time is passed in), so the sync session can rate-limit a connection
 * without timers of its own.
 */
export class TokenBucket {
  private tokens: number
  private last: number

  constructor(
    /** Tokens added per second. */
    readonly ratePerSecond: number,
    /** Most tokens held at once (and the size of the first burst). */
    readonly burst: number,
    now: number,
  ) {
    if (!(ratePerSecond > 0) || !(burst > 0)) throw new RangeError('TokenBucket: rate and burst must be positive')
    this.tokens = burst
    this.last = now
  }

  /**
   * Takes `count` tokens if there are enough, or if the bucket is full (so a
   * single item larger than the burst still passes, leaving a debt); returns
   * whether it took them.
   */
  tryTake(count: number, now: number): boolean {
    this.refill(now)
    if (this.tokens >= count || this.tokens >= this.burst) {
      this.tokens -= count
      return true
    }
    return false
  }

  private refill(now: number): void {
    if (now > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.ratePerSecond)
      this.last = now
    }
  }
}
