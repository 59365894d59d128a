/**
 * The connections a peer dialed with `connect(url)` and keeps up, over any
 * transport that can dial a WebSocket URL (`ws` in Node, the browser's
 * `WebSocket`): the first attempt (one dial, one handshake, within a
 * timeout) is the caller's answer; once a handshake completed, the link is
 * redialled with backoff ({@link Reconnector}) until the remote refuses for
 * good or `disconnect(url)`.
 */
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { RefuseReason, SyncSession } from '../sync/index.ts'
import type { Connection, Transport } from '../transports/transport.ts'
import { Reconnector } from '../transports/reconnect.ts'
import { parseWebSocketUrl } from '../transports/websocket/dial-errors.ts'

/** Options of a dial that every platform has (Node's `ConnectOptions` adds `tls`). */
export interface DialOptions {
  /** The secret to prove (default: the peer's `auth.token`). */
  readonly token?: string | undefined
  /**
   * The first attempt (dial and Concord handshake) fails with
   * `CONCORD_TIMEOUT` after this many ms (default 15 000).
   */
  readonly timeoutMs?: number | undefined
  /** Stops waiting (and reconnecting) when aborted. */
  readonly signal?: AbortSignal | undefined
}

/** Default of {@link DialOptions.timeoutMs}. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000

/** A redial of a connection that was up: the peer's `reconnecting` event. */
export interface ReconnectingEvent {
  readonly url: string
  /** 0 right after the connection closed, then 1, 2, ... per failed redial. */
  readonly attempt: number
  /** When the next dial starts, ms from now. */
  readonly delayMs: number
  /** Why the last redial failed (absent right after the connection closed). */
  readonly error?: ConcordError
}

/** OpenSSL's verdicts on a certificate chain it does not trust (Node's `error.code`). */
const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
])

/** The certificate error code behind a failed dial, if that is why it failed. */
function certificateError(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause !== null && typeof cause === 'object' && depth < 4; depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === 'string' && CERTIFICATE_ERRORS.has(code)) return code
    cause = (cause as { cause?: unknown }).cause
  }
  return undefined
}

function checkTimeout(timeoutMs: unknown): void {
  if (timeoutMs === undefined) return
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `connect: timeoutMs must be a number of ms > 0, got ${String(timeoutMs)}`)
  }
}

/** The error a refused handshake gives `connect`. */
function refusalError(url: string, by: 'local' | 'remote', reason: RefuseReason, message: string): ConcordError {
  const code =
    reason === 'auth'
      ? ErrorCodes.AUTH_FAILED
      : reason === 'version'
        ? ErrorCodes.UNSUPPORTED_VERSION
        : reason === 'limit'
          ? ErrorCodes.LIMIT_EXCEEDED
          : reason === 'shutdown'
            ? ErrorCodes.UNREACHABLE
            : ErrorCodes.PROTOCOL_ERROR
  const who = by === 'remote' ? `${url} refused` : `refused ${url}`
  return new ConcordError(code, `${who}: ${message}`)
}

/** What a {@link Dialer} needs from its peer. */
export interface DialerOptions {
  /** Runs the Concord protocol over a connection (the peer's `attach`). */
  readonly attach: (connection: Connection, options: { token?: string }) => SyncSession
  /** Called when a connection that was up is being redialled. */
  readonly onReconnecting?: ((event: ReconnectingEvent) => void) | undefined
}

/** The connections a peer dialed and keeps up. */
export class Dialer {
  /** Dialed connections kept up by {@link connect}: the address, and how to end a pending `connect`. */
  private readonly reconnectors = new Map<Reconnector, { url: string; cancel: () => void }>()

  constructor(private readonly options: DialerOptions) {}

  /**
   * Dials `url` through `transport` and keeps the connection up once a first
   * handshake succeeded; see `Peer.connect`. `transport` is asked for only
   * once the URL and options are checked.
   */
  connect(url: string, options: DialOptions, transport: () => Pick<Transport, 'dial'>): Promise<void> {
    let dialer: Pick<Transport, 'dial'>
    try {
      parseWebSocketUrl(url)
      checkTimeout(options.timeoutMs)
      dialer = transport()
    } catch (error) {
      return Promise.reject(error)
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
    const reconnector = new Reconnector({ transport: dialer, address: url })
    return new Promise<void>((resolve, reject) => {
      let settled = false
      /** True once a handshake completed: from then on failures are retried, not reported here. */
      let established = false
      const timer = setTimeout(() => settle(new ConcordError(ErrorCodes.TIMEOUT, `connect to ${url}: no Concord handshake within ${timeoutMs} ms`)), timeoutMs)
      const settle = (error?: Error) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        options.signal?.removeEventListener('abort', onAbort)
        if (error) {
          reconnector.stop()
          this.reconnectors.delete(reconnector)
          reject(error)
        } else {
          resolve()
        }
      }
      const onAbort = () => settle(new ConcordError(ErrorCodes.ABORTED, `connect to ${url} aborted`))
      this.reconnectors.set(reconnector, {
        url,
        cancel: () => settle(new ConcordError(ErrorCodes.ABORTED, `disconnected from ${url} before the first handshake`)),
      })
      if (options.signal?.aborted) return onAbort()
      options.signal?.addEventListener('abort', onAbort, { once: true })
      // The first attempt is one dial and one handshake: its failure is the caller's answer. A certificate
      // this peer does not trust will not become trusted by dialing again: that says how to trust it.
      reconnector.events.on('failure', ({ error, attempt, delayMs }) => {
        if (established) {
          this.options.onReconnecting?.({ url, attempt: attempt + 1, delayMs, error: isConcordError(error) ? error : undefined })
          return
        }
        const code = certificateError(error)
        if (code !== undefined) {
          settle(
            new ConcordError(
              ErrorCodes.AUTH_FAILED,
              `${url}: the server's TLS certificate is not trusted (${code}); ` +
                'give its CA (or the self-signed certificate) as connect(url, { tls: { ca } })',
              { cause: error },
            ),
          )
        } else {
          settle(isConcordError(error) ? error : new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${url}: ${String(error)}`, { cause: error }))
        }
      })
      reconnector.events.on('disconnect', ({ delayMs }) => {
        if (established) this.options.onReconnecting?.({ url, attempt: 0, delayMs })
      })
      reconnector.events.on('connection', (connection) => {
        const session = this.options.attach(connection, { token: options.token })
        let opened = false
        session.events.once('open', () => {
          opened = true
          established = true
          settle()
        })
        session.events.once('refused', ({ by, reason, message }) => {
          const error = refusalError(url, by, reason, message)
          // Refused for good (credentials, protocol version): stop redialling.
          if (by === 'remote' && (reason === 'auth' || reason === 'version')) {
            settle(error)
            reconnector.stop()
            this.reconnectors.delete(reconnector)
          } else if (!established) {
            settle(error)
          }
        })
        session.events.once('close', ({ reason }) => {
          if (!opened && !established) {
            settle(
              new ConcordError(ErrorCodes.UNREACHABLE, `${url} closed the connection before the Concord handshake completed${reason ? ` (${reason})` : ''}`),
            )
          }
        })
      })
      reconnector.start()
    })
  }

  /** Stops the connections dialed to `url`; returns how many. See `Peer.disconnect`. */
  disconnect(url: string): number {
    let stopped = 0
    for (const [reconnector, dialed] of [...this.reconnectors]) {
      if (dialed.url !== url) continue
      this.reconnectors.delete(reconnector)
      reconnector.stop()
      dialed.cancel()
      stopped++
    }
    return stopped
  }

  /** Stops every reconnector (the first step of closing the peer). */
  stop(): void {
    for (const reconnector of this.reconnectors.keys()) reconnector.stop()
    this.reconnectors.clear()
  }
}
