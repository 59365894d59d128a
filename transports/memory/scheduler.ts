/**
 * A virtual-time event queue: events run in (time, insertion) order, so a
 * simulation is deterministic. Time only moves when an event runs.
 */

/** A scheduled event, for {@link Scheduler.cancel}. */
export interface ScheduledEvent {
  readonly time: number
  readonly order: number
  readonly run: () => void
  cancelled: boolean
}

/** Binary min-heap of events by time, then insertion order. */
export class Scheduler {
  private readonly heap: ScheduledEvent[] = []
  private order = 0
  /** Current virtual time, in ms. */
  now = 0

  /** Number of pending (not cancelled) events. */
  get size(): number {
    let n = 0
    for (const event of this.heap) if (!event.cancelled) n++
    return n
  }

  /** Runs `run` at `now + delay`. */
  schedule(delay: number, run: () => void): ScheduledEvent {
    const event: ScheduledEvent = { time: this.now + Math.max(0, delay), order: this.order++, run, cancelled: false }
    this.heap.push(event)
    this.up(this.heap.length - 1)
    return event
  }

  /** Cancels a pending event (no effect if it already ran). */
  cancel(event: ScheduledEvent): void {
    event.cancelled = true
  }

  /** Time of the next pending event, or undefined. */
  peekTime(): number | undefined {
    this.dropCancelled()
    return this.heap[0]?.time
  }

  /** Runs the next event (advancing time); false when none is pending. */
  step(): boolean {
    this.dropCancelled()
    const event = this.pop()
    if (!event) return false
    this.now = Math.max(this.now, event.time)
    event.run()
    return true
  }

  private dropCancelled(): void {
    while (this.heap.length > 0 && this.heap[0].cancelled) this.pop()
  }

  private less(a: ScheduledEvent, b: ScheduledEvent): boolean {
    return a.time < b.time || (a.time === b.time && a.order < b.order)
  }

  private up(i: number): void {
    const heap = this.heap
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.less(heap[i], heap[parent])) break
      ;[heap[i], heap[parent]] = [heap[parent], heap[i]]
      i = parent
    }
  }

  private pop(): ScheduledEvent | undefined {
    const heap = this.heap
    if (heap.length === 0) return undefined
    const top = heap[0]
    const last = heap.pop()!
    if (heap.length > 0) {
      heap[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < heap.length && this.less(heap[l], heap[m])) m = l
        if (r < heap.length && this.less(heap[r], heap[m])) m = r
        if (m === i) break
        ;[heap[i], heap[m]] = [heap[m], heap[i]]
        i = m
      }
    }
    return top
  }
}
