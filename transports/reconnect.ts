/**
 * Reconnect with exponential backoff, jitter and a cap, for any transport:
 * keeps one connection to an address alive, dialing again after it closes
 * or after a failed dial.
 */
import { Emitter } from '../crdt/emitter.ts'
import type { Connection, Transport } from './transport.ts'

/** Backoff settings. */
export interface BackoffOptions {
  /** First delay in ms (default 100). */
  readonly initialMs?: number | undefined
  /** Largest delay in ms (default 10 000). */
  readonly maxMs?: number | undefined
  /** Growth per failed attempt (default 2). */
  readonly factor?: number | undefined
  /** Fraction of the delay drawn at random, 0..1 (default 0.5: delay in [d/2, d]). */
  readonly jitter?: number | undefined
}

/**
 * The delay before attempt `attempt` (0 = first retry): `initial * factor^attempt`
 * capped at `max`, minus a random part of up to `jitter` of it.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const initial = options.initialMs ?? 100
  const max = options.maxMs ?? 10_000
  const factor = options.factor ?? 2
  const jitter = Math.min(1, Math.max(0, options.jitter ?? 0.5))
  const base = Math.min(max, initial * factor ** Math.max(0, attempt))
  return base * (1 - jitter * random())
}

/** Timer functions (defaults to the global ones; the simulated network passes virtual ones). */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

const globalTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/** Options of a {@link Reconnector}. */
export interface ReconnectOptions {
  readonly transport: Pick<Transport, 'dial'>
  readonly address: string
  readonly backoff?: BackoffOptions | undefined
  /** Random source for the jitter (default `Math.random`; pass a seeded one in simulations). */
  readonly random?: (() => number) | undefined
  readonly timers?: Timers | undefined
  /** Time source (default `Date.now`). */
  readonly now?: (() => number) | undefined
  /** A connection that lived this long resets the backoff (default 5 000 ms); a flapping one keeps backing off. */
  readonly stableMs?: number | undefined
}

/** Events of a {@link Reconnector}. */
export interface ReconnectEvents extends Record<string, unknown> {
  /** A new connection is up (the first one and every reconnection). */
  connection: Connection
  /** A dial failed; the next attempt is in `delayMs`. */
  failure: { readonly error: unknown; readonly attempt: number; readonly delayMs: number }
  /** The current connection closed; the next attempt is in `delayMs`. */
  disconnect: { readonly reason?: string; readonly delayMs: number }
}

/** Keeps a connection to one address alive. `start()` dials; `stop()` closes and stops. */
export class Reconnector {
  readonly events = new Emitter<ReconnectEvents>()
  private running = false
  private attempt = 0
  private timer: unknown
  private current: Connection | undefined
  private abort: AbortController | undefined
  private readonly timers: Timers
  private readonly random: () => number

  constructor(private readonly options: ReconnectOptions) {
    this.timers = options.timers ?? globalTimers
    this.random = options.random ?? Math.random
  }

  /** The live connection, if any. */
  get connection(): Connection | undefined {
    return this.current?.open ? this.current : undefined
  }

  /** Starts dialing. */
  start(): void {
    if (this.running) return
    this.running = true
    this.attempt = 0
    void this.dial()
  }

  /** Stops reconnecting and closes the current connection. */
  stop(): void {
    this.running = false
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer)
    this.timer = undefined
    this.abort?.abort()
    this.current?.close('reconnector stopped')
    this.current = undefined
  }

  private async dial(): Promise<void> {
    this.timer = undefined
    if (!this.running) return
    const abort = (this.abort = new AbortController())
    let connection: Connection
    try {
      connection = await this.options.transport.dial(this.options.address, { signal: abort.signal })
    } catch (error) {
      if (!this.running) return
      const delayMs = backoffDelay(this.attempt, this.options.backoff, this.random)
      this.events.emit('failure', { error, attempt: this.attempt, delayMs })
      this.attempt++
      this.timer = this.timers.setTimeout(() => void this.dial(), delayMs)
      return
    }
    if (!this.running) {
      connection.close('reconnector stopped')
      return
    }
    const now = this.options.now ?? Date.now
    const connectedAt = now()
    this.current = connection
    let handled = false
    const onClose = (reason?: string): void => {
      if (handled) return
      handled = true
      if (this.current === connection) this.current = undefined
      if (!this.running) return
      if (now() - connectedAt >= (this.options.stableMs ?? 5_000)) this.attempt = 0
      const delayMs = backoffDelay(this.attempt, this.options.backoff, this.random)
      this.attempt++
      this.events.emit('disconnect', { reason, delayMs })
      this.timer = this.timers.setTimeout(() => void this.dial(), delayMs)
    }
    connection.events.once('close', ({ reason }) => onClose(reason))
    this.events.emit('connection', connection)
    if (!connection.open) onClose('closed before use')
  }
}
