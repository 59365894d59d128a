/**
 * The WebSocket side of a peer: the listening transport, the connections it
 * dialed and keeps up ({@link Reconnector}s), and the stock y-websocket route
 * at `/yjs/<room>`. Sessions are attached by the peer (`attach`); this module
 * only moves connections to it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { Store } from '../persistence/store.ts'
import type { Admission, RefuseReason, SyncHost, SyncSession } from '../sync/index.ts'
import type { Connection } from '../transports/transport.ts'
import { Reconnector } from '../transports/reconnect.ts'
import { parseWebSocketUrl, WebSocketTransport, type WebSocketListenOptions } from '../transports/websocket/index.ts'
import { YWebsocketRoute, type YWebsocketOptions, type YWebsocketStats } from './y-websocket-route.ts'

/**
 * A plain-HTTP route served on the peer's listener (`listen({ routes })`),
 * such as the MCP server at `/mcp` (`concord/mcp`). It answers requests
 * under `path` itself (credentials included: through the peer's
 * `admission`) and is closed with the peer.
 */
export interface HttpRoute {
  /** Mount point, e.g. `/mcp` (sub-paths included); not `/concord`. */
  readonly path: string
  /** Handles one request under `path`; never throws (a failure is answered). */
  handleRequest(request: IncomingMessage, response: ServerResponse): void
  /** Ends the route's open requests and sessions (the peer closes it before its store). */
  close?(): void | Promise<void>
}

/** Where and how to listen. */
export interface ListenOptions {
  /** TCP port (default 0: any free port). */
  readonly port?: number | undefined
  /** Interface to bind (default `127.0.0.1`: this machine only; `0.0.0.0` or `::` for every interface, with credentials). */
  readonly host?: string | undefined
  /** TLS key and certificate (PEM) for `wss://`. */
  readonly tls?: WebSocketListenOptions['tls'] | undefined
  /**
   * Serve stock y-websocket clients at `/yjs/<room>` (default true), admitted
   * like every peer (credentials, access with the room as the name); an
   * object tunes the route (awareness bounds, message size).
   */
  readonly yWebsocket?: boolean | YWebsocketOptions | undefined
  /** Sockets held at once, every path included (default 1024); beyond it, HTTP 503. */
  readonly maxConnections?: number | undefined
  /** Sockets held at once from one remote address (default 128); beyond it, HTTP 503. */
  readonly maxConnectionsPerAddress?: number | undefined
  /** An HTTP upgrade request (and TLS handshake) must be complete within this (default 10 000 ms). */
  readonly upgradeTimeoutMs?: number | undefined
  /** Plain-HTTP routes served on the same listener (e.g. MCP at `/mcp`); other requests get 426. */
  readonly routes?: readonly HttpRoute[] | undefined
  readonly signal?: AbortSignal | undefined
}

/** Options of {@link Peer.connect}. */
export interface ConnectOptions {
  /** The secret to prove (default: the peer's `auth.token`). */
  readonly token?: string | undefined
  /**
   * How a `wss://` server's certificate is checked: `ca` (PEM) trusts a
   * private CA or a self-signed server instead of the system's CAs (the
   * certificate must still name the URL's host).
   */
  readonly tls?: { readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> } | undefined
  /**
   * The first attempt (dial and Concord handshake) fails with
   * `CONCORD_TIMEOUT` after this many ms (default 15 000).
   */
  readonly timeoutMs?: number | undefined
  /** Stops waiting (and reconnecting) when aborted. */
  readonly signal?: AbortSignal | undefined
}

/** OpenSSL's verdicts on a certificate chain it does not trust (Node's `error.code`). */
const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE', 'ERR_TLS_CERT_ALTNAME_INVALID', 'HOSTNAME_MISMATCH',
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

/** Default of {@link ConnectOptions.timeoutMs}. */
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

function checkTimeout(timeoutMs: unknown): void {
  if (timeoutMs === undefined) return
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `connect: timeoutMs must be a number of ms > 0, got ${String(timeoutMs)}`)
  }
}

/** The error a refused handshake gives `connect`. */
function refusalError(url: string, by: 'local' | 'remote', reason: RefuseReason, message: string): ConcordError {
  const code = reason === 'auth' ? ErrorCodes.AUTH_FAILED
    : reason === 'version' ? ErrorCodes.UNSUPPORTED_VERSION
      : reason === 'limit' ? ErrorCodes.LIMIT_EXCEEDED
        : reason === 'shutdown' ? ErrorCodes.UNREACHABLE
          : ErrorCodes.PROTOCOL_ERROR
  const who = by === 'remote' ? `${url} refused` : `refused ${url}`
  return new ConcordError(code, `${who}: ${message}`)
}

/** What the WebSocket side needs from its peer. */
export interface WebSocketNetworkOptions {
  /** The peer's id (a y-websocket client may not claim it). */
  readonly id: string
  /** Largest Concord frame of the peer (the socket's payload limit is derived from it). */
  readonly maxFrameBytes?: number | undefined
  /** The peer's store: y-websocket rooms are its Yjs documents. */
  readonly store: Store
  /** The peer's sync host: y-websocket clients are sent its durable commits. */
  readonly host: Pick<SyncHost, 'subscribe'>
  /** The peer's admission: y-websocket clients pass it like every peer. */
  readonly admission: Admission
  /** Runs the Concord protocol over a connection (the peer's `attach`). */
  readonly attach: (connection: Connection, options: { token?: string }) => SyncSession
  /** Called for every inbound WebSocket connection. */
  readonly onInbound: (connection: Connection) => void
  /** Called when a connection that was up is being redialled. */
  readonly onReconnecting?: ((event: ReconnectingEvent) => void) | undefined
}

/** The WebSocket transport of a peer, its dialed connections and its y-websocket route. */
export class WebSocketNetwork {
  /** Dialed connections kept up by {@link connect}: the address, and how to end a pending `connect`. */
  private readonly reconnectors = new Map<Reconnector, { url: string; cancel: () => void }>()
  private websocket: WebSocketTransport | undefined
  private websocketWired = false
  private yRoute: YWebsocketRoute | undefined
  private readonly httpRoutes: HttpRoute[] = []

  constructor(private readonly options: WebSocketNetworkOptions) {}

  /** Serves the Concord protocol (and y-websocket unless turned off); resolves with the URL. */
  async listen(options: ListenOptions): Promise<{ url: string; port: number }> {
    const transport = this.transport()
    const routes = options.routes ?? []
    for (const route of routes) {
      if (route === null || typeof route !== 'object' || typeof route.path !== 'string' || !route.path.startsWith('/') || typeof route.handleRequest !== 'function') {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'listen: a route is { path: "/...", handleRequest(request, response) }')
      }
    }
    const url = await transport.listen({
      port: options.port ?? 0, host: options.host ?? '127.0.0.1', tls: options.tls,
      maxConnections: options.maxConnections, maxConnectionsPerAddress: options.maxConnectionsPerAddress, upgradeTimeoutMs: options.upgradeTimeoutMs,
    }, { signal: options.signal })
    for (const route of routes) {
      transport.routeRequests(route.path, (request, response) => route.handleRequest(request, response))
      this.httpRoutes.push(route)
    }
    if (options.yWebsocket !== false) this.serveYWebsocket(transport, options.yWebsocket === true || options.yWebsocket === undefined ? {} : options.yWebsocket)
    return { url, port: Number(new URL(url).port) }
  }

  /** Counters of the y-websocket route, once served. */
  get yWebsocketStats(): YWebsocketStats | undefined {
    return this.yRoute?.stats
  }

  /** Dials `url` and keeps the connection up once a first handshake succeeded; see {@link Peer.connect}. */
  connect(url: string, options: ConnectOptions = {}): Promise<void> {
    try {
      parseWebSocketUrl(url)
      checkTimeout(options.timeoutMs)
    } catch (error) {
      return Promise.reject(error)
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
    const transport = this.transport()
    const tls = options.tls
    const reconnector = new Reconnector({
      transport: tls ? { dial: (address, dialOptions) => transport.dial(address, { ...dialOptions, tls }) } : transport,
      address: url,
    })
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
      this.reconnectors.set(reconnector, { url, cancel: () => settle(new ConcordError(ErrorCodes.ABORTED, `disconnected from ${url} before the first handshake`)) })
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
          settle(new ConcordError(ErrorCodes.AUTH_FAILED, `${url}: the server's TLS certificate is not trusted (${code}); ` +
            'give its CA (or the self-signed certificate) as connect(url, { tls: { ca } })', { cause: error }))
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
            settle(new ConcordError(ErrorCodes.UNREACHABLE, `${url} closed the connection before the Concord handshake completed${reason ? ` (${reason})` : ''}`))
          }
        })
      })
      reconnector.start()
    })
  }

  /** Stops the connections dialed to `url`; returns how many. See {@link Peer.disconnect}. */
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
  stopReconnecting(): void {
    for (const reconnector of this.reconnectors.keys()) reconnector.stop()
    this.reconnectors.clear()
  }

  /** Closes the HTTP routes and the y-websocket route, and stops the transport. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.httpRoutes.map(async (route) => route.close?.()))
    this.yRoute?.close()
    await this.websocket?.stop()
  }

  private transport(): WebSocketTransport {
    this.websocket ??= new WebSocketTransport({ maxPayload: Math.max(this.options.maxFrameBytes ?? 1 << 20, 1 << 20) + 1024 })
    if (!this.websocketWired) {
      this.websocketWired = true
      this.websocket.events.on('connection', (connection) => this.options.onInbound(connection))
    }
    return this.websocket
  }

  private serveYWebsocket(transport: WebSocketTransport, tuning: YWebsocketOptions): void {
    if (this.yRoute) return
    const { id, store, host, admission } = this.options
    const route = new YWebsocketRoute({ ...tuning, id, store, host, admission, notFound: (socket) => transport.notFound(socket) })
    this.yRoute = route
    transport.route('/yjs', (request, socket, head) => route.handleUpgrade(request, socket, head))
  }
}
