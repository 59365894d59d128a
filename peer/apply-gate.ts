/**
 * Heavy remote commits take turns. A commit whose deltas are large (an
 * anti-entropy bundle of many names, a big document delta) is applied
 * synchronously and all or none, so it holds the event loop for as long as
 * the libraries take; nothing can run inside it. What can be chosen is when
 * it runs: each heavy commit waits for the heavy ones before it (one at a
 * time, per peer) and then for one macrotask turn, so that frames other
 * sessions already sent are read and their small commits applied first.
 * Small commits never wait here.
 */
import { afterThisTurn } from '../persistence/turn.ts'

/** Delta bytes from which a commit counts as heavy (default). */
export const DEFAULT_HEAVY_APPLY_BYTES = 64 * 1024

/** Lets pending I/O callbacks (other sessions' frames) run before the caller goes on. */
function macrotask(): Promise<void> {
  return new Promise((resolve) => afterThisTurn(resolve))
}

/** Serialises heavy commits, each after a macrotask turn. */
export class HeavyApplyGate {
  private tail: Promise<void> = Promise.resolve()
  /** Heavy commits that waited their turn (statistics). */
  heavy = 0

  /** `thresholdBytes` 0 turns the gate off. */
  constructor(readonly thresholdBytes = DEFAULT_HEAVY_APPLY_BYTES) {}

  /** Whether deltas of these sizes make a heavy commit. */
  isHeavy(entries: ReadonlyArray<{ readonly delta: Uint8Array }>): boolean {
    if (this.thresholdBytes <= 0) return false
    let bytes = 0
    for (const entry of entries) bytes += entry.delta.length
    return bytes >= this.thresholdBytes
  }

  /** Runs `apply` at once for a light commit, else after the heavy ones queued before it and a macrotask turn. */
  async run<T>(entries: ReadonlyArray<{ readonly delta: Uint8Array }>, apply: () => Promise<T>): Promise<T> {
    if (!this.isHeavy(entries)) return apply()
    this.heavy++
    const previous = this.tail
    let release!: () => void
    this.tail = new Promise((resolve) => {
      release = resolve
    })
    try {
      await previous
      await macrotask()
      return await apply()
    } finally {
      release()
    }
  }
}
