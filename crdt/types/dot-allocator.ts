/**
 * Hands out fresh dots of one replica: each call returns a counter past
 * everything the context has seen from that replica and past every dot
 * already handed out, so one delta can use several new dots.
 */
import type { CausalContext } from '../causal/causal-context.ts'
import type { Dot } from '../causal/dot.ts'

/** A source of fresh dots for one replica. */
export class DotAllocator {
  private counter: number

  /**
   * @param replica the replica that creates the dots. @param ctx its causal context (read only).
   * @param floor a counter already used (dots up to it are never handed out)
   */
  constructor(
    readonly replica: string,
    ctx: CausalContext,
    floor = 0,
  ) {
    this.counter = Math.max(ctx.next(replica).counter - 1, floor)
  }

  /** A new dot, never handed out before. */
  next(): Dot {
    this.counter += 1
    return { replica: this.replica, counter: this.counter }
  }
}
