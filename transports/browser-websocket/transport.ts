/**
 * The WebSocket transport of a browser: `dial(url)` over the WHATWG
 * `WebSocket` (the page's global one by default). A browser cannot listen,
 * so this transport has no `listen`. A browser tells nothing of why a dial
 * failed (nothing listening, an HTTP answer instead of an upgrade, a TLS
 * failure, a blocked port all look alike), so a failed dial is reported as
 * `CONCORD_UNREACHABLE` with what can be said: the close code, or that it
 * timed out.
 */
import { Emitter } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { AbortOptions, Connection, Transport, TransportEvents } from '../transport.ts'
import { parseWebSocketUrl } from '../websocket/dial-errors.ts'
import { BrowserWebSocketConnection } from './connection.ts'
import { CLOSED, globalWebSocket, type WebSocketLike, type WebSocketLikeConstructor, type WebSocketLikeEvents } from './websocket-like.ts'

/** Options of a {@link BrowserWebSocketTransport}. */
export interface BrowserWebSocketTransportOptions {
  /** The WebSocket class (default: the global `WebSocket`; tests in Node pass `ws`'s). */
  readonly WebSocket?: WebSocketLikeConstructor | undefined
  /** Largest frame taken, bytes (default 1 MiB + 1 KiB, as the Node transport); a larger one ends the connection. */
  readonly maxPayload?: number | undefined
  /** `send` waits while more than this many bytes are buffered (default 4 MiB). */
  readonly highWaterMark?: number | undefined
  /** Dial: give up when the WebSocket handshake takes longer (default 10 000 ms). */
  readonly dialTimeoutMs?: number | undefined
}

/** A dial-only {@link Transport} over the browser's WebSocket. */
export class BrowserWebSocketTransport implements Transport {
  readonly name = 'websocket'
  /** Never emits: a browser accepts no connections. */
  readonly events = new Emitter<TransportEvents>()
  private readonly connections = new Set<BrowserWebSocketConnection>()
  private readonly maxPayload: number
  private readonly highWaterMark: number
  private stopped = false

  constructor(private readonly options: BrowserWebSocketTransportOptions = {}) {
    this.maxPayload = options.maxPayload ?? (1 << 20) + 1024
    this.highWaterMark = options.highWaterMark ?? 4 << 20
  }

  /** Opens a connection to a `ws://` or `wss://` URL. Never put credentials in the URL: the sync handshake carries them. */
  dial(address: string, options: AbortOptions = {}): Promise<Connection> {
    if (this.stopped) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'transport stopped'))
    if (options.signal?.aborted) return Promise.reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
    const WebSocketClass = this.options.WebSocket ?? globalWebSocket()
    let socket: WebSocketLike
    try {
      parseWebSocketUrl(address)
      if (!WebSocketClass) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'this context has no WebSocket: pass one as { WebSocket }')
      socket = new WebSocketClass(address)
    } catch (error) {
      if (error instanceof ConcordError) return Promise.reject(error)
      // SyntaxError (a URL the browser refuses) or SecurityError (ws:// from an https:// page, a blocked port).
      const hint = (error as Error)?.name === 'SecurityError' ? ' (a page served over https:// may open only wss:// URLs)' : ''
      return Promise.reject(
        new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot dial ${address}: ${(error as Error)?.message ?? String(error)}${hint}`, { cause: error }),
      )
    }
    socket.binaryType = 'arraybuffer'
    return new Promise<Connection>((resolve, reject) => {
      let settled = false
      let failed = false
      const cleanup = (): void => {
        clearTimeout(timer)
        options.signal?.removeEventListener('abort', onAbort)
        socket.removeEventListener('open', onOpen)
        socket.removeEventListener('error', onError)
        socket.removeEventListener('close', onClose)
      }
      const fail = (error: ConcordError): void => {
        if (settled) return
        settled = true
        cleanup()
        if (socket.readyState !== CLOSED) {
          // Closing a socket still connecting makes some implementations (`ws`) report an error: nobody minds it now.
          socket.addEventListener('error', () => {})
          try {
            socket.close()
          } catch {
            // already closing
          }
        }
        reject(error)
      }
      const onOpen = (): void => {
        if (settled) return
        settled = true
        cleanup()
        if (this.stopped) {
          socket.close(1001, 'transport stopped')
          reject(new ConcordError(ErrorCodes.CLOSED, 'transport stopped'))
          return
        }
        const connection = new BrowserWebSocketConnection(socket, address, { highWaterMark: this.highWaterMark, maxPayload: this.maxPayload })
        this.connections.add(connection)
        connection.events.once('close', () => this.connections.delete(connection))
        resolve(connection)
      }
      const onError = (): void => {
        failed = true
      }
      const onClose = (event: WebSocketLikeEvents['close']): void => {
        const why = failed
          ? `the WebSocket connection failed (close code ${event.code}; the browser does not say why: nothing listening, ` +
            'an HTTP answer instead of an upgrade, or a TLS failure)'
          : `closed during the handshake (code ${event.code})`
        fail(new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${address}: ${why}`))
      }
      const onAbort = (): void => fail(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      const dialTimeoutMs = this.options.dialTimeoutMs ?? 10_000
      const timer = setTimeout(
        () => fail(new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${address}: no WebSocket handshake within ${dialTimeoutMs} ms`)),
        dialTimeoutMs,
      )
      socket.addEventListener('open', onOpen)
      socket.addEventListener('error', onError)
      socket.addEventListener('close', onClose)
      options.signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Closes every connection; later dials reject with `CONCORD_CLOSED`. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    for (const connection of [...this.connections]) connection.close('transport stopped')
  }
}
