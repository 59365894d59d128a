/**
 * The WebSocket side of a peer: the listening transport, the connections it
 * dialed and keeps up (a {@link Dialer}), and the stock y-websocket route
 * at `/yjs/<room>`. Sessions are attached by the peer (`attach`); this module
 * only moves connections to it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Store } from '../persistence/store.ts'
import type { Admission, SyncHost, SyncSession } from '../sync/index.ts'
import type { Connection } from '../transports/transport.ts'
import { WebSocketTransport, type WebSocketListenOptions } from '../transports/websocket/index.ts'
import { Dialer, type DialOptions, type ReconnectingEvent } from './dialer.ts'
import { YWebsocketRoute, type YWebsocketOptions, type YWebsocketStats } from './y-websocket-route.ts'

/**
 * A plain-HTTP route served on the peer's listener (`listen({ routes })`),
 * such as the MCP server at `/mcp` (`concord-crdt/mcp`). It answers requests
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
  /**
   * Serve the inspector page at `/ui` (or `path`): a browser peer with the
   * credentials it is given, and a read-only API for the log, blame, diffs
   * and sessions (README, "Inspector"). Default false.
   */
  readonly ui?: boolean | { readonly path?: string | undefined } | undefined
  readonly signal?: AbortSignal | undefined
}

/** Options of {@link Peer.connect}. */
export interface ConnectOptions extends DialOptions {
  /**
   * How a `wss://` server's certificate is checked: `ca` (PEM) trusts a
   * private CA or a self-signed server instead of the system's CAs (the
   * certificate must still name the URL's host).
   */
  readonly tls?: { readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> } | undefined
}

/** What the WebSocket side needs from its peer. */
export interface WebSocketNetworkOptions {
  /** The peer's agent id (a y-websocket client may not claim it). */
  readonly agentId: string
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
  /** Dialed connections kept up by {@link connect}. */
  private readonly dialer: Dialer
  private websocket: WebSocketTransport | undefined
  private websocketWired = false
  private yRoute: YWebsocketRoute | undefined
  private readonly httpRoutes: HttpRoute[] = []

  constructor(private readonly options: WebSocketNetworkOptions) {
    this.dialer = new Dialer({ attach: options.attach, onReconnecting: options.onReconnecting })
  }

  /** Serves the Concord protocol (and y-websocket unless turned off); resolves with the URL. */
  async listen(options: ListenOptions): Promise<{ url: string; port: number }> {
    const transport = this.transport()
    const routes = options.routes ?? []
    for (const route of routes) {
      if (
        route === null ||
        typeof route !== 'object' ||
        typeof route.path !== 'string' ||
        !route.path.startsWith('/') ||
        typeof route.handleRequest !== 'function'
      ) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'listen: a route is { path: "/...", handleRequest(request, response) }')
      }
    }
    const url = await transport.listen(
      {
        port: options.port ?? 0,
        host: options.host ?? '127.0.0.1',
        tls: options.tls,
        maxConnections: options.maxConnections,
        maxConnectionsPerAddress: options.maxConnectionsPerAddress,
        upgradeTimeoutMs: options.upgradeTimeoutMs,
      },
      { signal: options.signal },
    )
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
    const tls = options.tls
    return this.dialer.connect(url, options, () => {
      const transport = this.transport()
      return tls ? { dial: (address, dialOptions) => transport.dial(address, { ...dialOptions, tls }) } : transport
    })
  }

  /** Stops the connections dialed to `url`; returns how many. See {@link Peer.disconnect}. */
  disconnect(url: string): number {
    return this.dialer.disconnect(url)
  }

  /** Stops every reconnector (the first step of closing the peer). */
  stopReconnecting(): void {
    this.dialer.stop()
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
    const { agentId, store, host, admission } = this.options
    const route = new YWebsocketRoute({ ...tuning, agentId, store, host, admission, notFound: (socket) => transport.notFound(socket) })
    this.yRoute = route
    transport.route('/yjs', (request, socket, head) => route.handleUpgrade(request, socket, head))
  }
}
