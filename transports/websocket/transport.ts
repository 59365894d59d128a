/**
 * The WebSocket transport (`ws`): a server on one path of an HTTP(S) server
 * (its own, or one passed in), other paths routable to other protocols
 * (y-websocket at `/yjs`), plain HTTP requests routable to handlers (MCP
 * at `/mcp`), and a client `dial(url)`. Frames are binary
 * WebSocket messages; `maxPayload` bounds them (an oversized or malformed
 * frame closes only that client's connection).
 *
 * Limits of a listener (listener-limits.ts): at most `maxConnections`
 * sockets, `maxConnectionsPerAddress` from one address (503 beyond);
 * an upgrade request must be complete within `upgradeTimeoutMs` (Node's
 * headers timeout: a request trickled byte by byte, or a socket that sends
 * nothing, is answered 408 and closed); an inbound WebSocket frame, once
 * begun, must complete within `frameTimeoutMs`.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocket, WebSocketServer } from 'ws'
import { Emitter, type Unsubscribe } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { AbortOptions, Connection, Transport, TransportEvents } from '../transport.ts'
import { WebSocketConnection } from './connection.ts'
import { CONCORD_PATH_HEADER, listenError, parseWebSocketUrl, socketError, unexpectedResponseError } from './dial-errors.ts'
import { ConnectionLimiter, DEFAULT_LISTENER_LIMITS, addressOf, refuseWith503 } from './listener-limits.ts'

/** Options of a {@link WebSocketTransport}. */
export interface WebSocketTransportOptions {
  /** Path of the Concord protocol on the server (default `/concord`). */
  readonly path?: string | undefined
  /** Largest frame accepted, in bytes (default 1 MiB + 1 KiB: a 1 MiB sync frame and headroom). */
  readonly maxPayload?: number | undefined
  /** Heartbeat: ping every this many ms, drop a peer silent since the last ping (default 15 000; 0: off). */
  readonly heartbeatIntervalMs?: number | undefined
  /** `send` waits while more than this many bytes are buffered (default 4 MiB). */
  readonly highWaterMark?: number | undefined
  /** Dial: give up when the WebSocket handshake takes longer (default 10 000 ms). */
  readonly dialTimeoutMs?: number | undefined
  /** Dial: TLS options for `wss://` (for example a `ca` for a self-signed server). */
  readonly tls?: WebSocketDialTls | undefined
  /**
   * An inbound WebSocket frame, once its first bytes arrived, must be
   * complete within this (default 30 000 ms): a frame sent byte by byte
   * ends the connection. (Before the sync handshake, its own timeout is
   * shorter.)
   */
  readonly frameTimeoutMs?: number | undefined
}

/** How a `wss://` dial checks the server's certificate. */
export interface WebSocketDialTls {
  /** Certificates (PEM) to trust instead of the system's (a private CA, or a self-signed server). */
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer>
  /** false accepts any certificate: a man in the middle too. Default true; tests only. */
  readonly rejectUnauthorized?: boolean
}

/** Options of {@link WebSocketTransport.dial}. */
export interface WebSocketDialOptions extends AbortOptions {
  /** TLS of this dial (default: the transport's `tls`). */
  readonly tls?: WebSocketDialTls | undefined
}

/** Where and how to listen. */
export interface WebSocketListenOptions {
  /** Port (0: any free port). */
  readonly port?: number | undefined
  /** Interface (default `127.0.0.1`; `0.0.0.0` to accept from other machines). */
  readonly host?: string | undefined
  /** Serve `wss://` with this certificate. */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer } | undefined
  /** Use this existing HTTP(S) server instead of creating one (it must already listen, or listen later). */
  readonly server?: HttpServer | HttpsServer | undefined
  /**
   * Sockets held at once, every path included (default 1024); beyond it a
   * connection is answered 503. With `server`, only upgrades are counted.
   */
  readonly maxConnections?: number | undefined
  /** Sockets held at once from one remote address (default 128); beyond it, 503. */
  readonly maxConnectionsPerAddress?: number | undefined
  /**
   * An upgrade request (or, with `tls`, the TLS handshake) must be complete
   * within this (default 10 000 ms), else the socket is closed (408). Not
   * applied to a `server` passed in (set its `headersTimeout`).
   */
  readonly upgradeTimeoutMs?: number | undefined
}

/** Handles an HTTP upgrade for a mounted path (another WebSocket protocol). */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void

/** Handles a plain HTTP request (not an upgrade) for a mounted path. */
export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void

function pathMatches(pathname: string, mount: string): boolean {
  return pathname === mount || pathname.startsWith(mount.endsWith('/') ? mount : `${mount}/`)
}

/** WebSocket {@link Transport}. See the module comment. */
export class WebSocketTransport implements Transport {
  readonly name = 'websocket'
  readonly events = new Emitter<TransportEvents>()
  private readonly path: string
  private readonly maxPayload: number
  private readonly heartbeatIntervalMs: number
  private readonly highWaterMark: number
  private readonly frameTimeoutMs: number
  private readonly routes = new Map<string, UpgradeHandler>()
  private readonly requestRoutes = new Map<string, RequestHandler>()
  private readonly connections = new Set<WebSocketConnection>()
  private readonly wss: WebSocketServer
  private httpServer: HttpServer | HttpsServer | undefined
  private ownsServer = false
  private detachUpgrade: (() => void) | undefined
  private stopped = false
  private limiter: ConnectionLimiter | undefined
  /** Sockets counted by the limiter (admitted), and sockets refused (their upgrade is dropped). */
  private readonly counted = new WeakSet<object>()
  private readonly refusedSockets = new WeakSet<object>()
  /** Upgrade deadlines of our server's sockets that have not asked to upgrade yet. */
  private readonly deadlines = new WeakMap<object, ReturnType<typeof setTimeout>>()

  constructor(private readonly options: WebSocketTransportOptions = {}) {
    this.path = options.path ?? '/concord'
    this.maxPayload = options.maxPayload ?? 1024 * 1024 + 1024
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 15_000
    this.highWaterMark = options.highWaterMark ?? 4 * 1024 * 1024
    this.frameTimeoutMs = options.frameTimeoutMs ?? 30_000
    this.wss = new WebSocketServer({ noServer: true, maxPayload: this.maxPayload, clientTracking: false })
    this.wss.on('error', () => {
      // errors of the shared server object never take the process down
    })
  }

  /** The HTTP(S) server, once listening. */
  get server(): HttpServer | HttpsServer | undefined {
    return this.httpServer
  }

  /** Number of open connections (inbound and outbound). */
  get connectionCount(): number {
    return this.connections.size
  }

  /** The listener's sockets held now and refused so far (by limit), once listening. */
  get listenerStats(): { readonly open: number; readonly refusedTotal: number; readonly refusedPerAddress: number } | undefined {
    const limiter = this.limiter
    return limiter && { open: limiter.open, refusedTotal: limiter.refused.total, refusedPerAddress: limiter.refused.perAddress }
  }

  /**
   * Mounts another protocol on `path` of the same server (and sub-paths:
   * `/yjs` also gets `/yjs/room`). Returns a function that unmounts it.
   */
  route(path: string, handler: UpgradeHandler): Unsubscribe {
    if (pathMatches(path, this.path) || pathMatches(this.path, path)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `path ${path} overlaps the Concord path ${this.path}`)
    }
    this.routes.set(path, handler)
    return () => {
      if (this.routes.get(path) === handler) this.routes.delete(path)
    }
  }

  /**
   * Mounts a handler of plain HTTP requests on `path` and its sub-paths, on
   * the server this transport creates (a server passed in to `listen`
   * answers its own requests: mount the handler there). Every other request
   * is answered 426 (WebSocket only). Returns a function that unmounts it.
   */
  routeRequests(path: string, handler: RequestHandler): Unsubscribe {
    if (pathMatches(path, this.path) || pathMatches(this.path, path)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `path ${path} overlaps the Concord path ${this.path}`)
    }
    this.requestRoutes.set(path, handler)
    return () => {
      if (this.requestRoutes.get(path) === handler) this.requestRoutes.delete(path)
    }
  }

  private request(request: IncomingMessage, response: ServerResponse): void {
    let pathname: string | undefined
    try {
      pathname = new URL(request.url ?? '/', 'http://localhost').pathname
    } catch {
      pathname = undefined
    }
    for (const [mount, handler] of this.requestRoutes) {
      if (pathname === undefined || this.stopped || !pathMatches(pathname, mount)) continue
      // A routed request is what this socket came for: its upgrade deadline no longer applies.
      const deadline = this.deadlines.get(request.socket)
      if (deadline) {
        clearTimeout(deadline)
        this.deadlines.delete(request.socket)
      }
      try {
        handler(request, response)
      } catch {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' })
        response.end()
      }
      return
    }
    response.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket only\n')
  }

  /** Listens (or attaches to `options.server`); resolves with the `ws://` or `wss://` URL of the Concord path. */
  async listen(address: unknown = {}, options: AbortOptions = {}): Promise<string> {
    if (this.stopped) throw new ConcordError(ErrorCodes.CLOSED, 'transport stopped')
    if (this.httpServer) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'already listening')
    if (options.signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'aborted')
    const listen = (address ?? {}) as WebSocketListenOptions
    const host = listen.host ?? '127.0.0.1'
    this.limiter = new ConnectionLimiter({
      maxConnections: listen.maxConnections ?? DEFAULT_LISTENER_LIMITS.maxConnections,
      maxConnectionsPerAddress: listen.maxConnectionsPerAddress ?? DEFAULT_LISTENER_LIMITS.maxConnectionsPerAddress,
    })
    let server: HttpServer | HttpsServer
    if (listen.server) {
      server = listen.server
    } else {
      const upgradeTimeoutMs = listen.upgradeTimeoutMs ?? 10_000
      const timeouts = {
        headersTimeout: upgradeTimeoutMs,
        requestTimeout: upgradeTimeoutMs,
        connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(upgradeTimeoutMs / 4))),
      }
      server = listen.tls
        ? createHttpsServer({ key: listen.tls.key, cert: listen.tls.cert, handshakeTimeout: upgradeTimeoutMs, ...timeouts })
        : createHttpServer(timeouts)
      server.on('request', (request, response) => this.request(request, response))
      // Every socket of our own server is counted from the start (with TLS,
      // once its handshake is done: a 503 must be readable).
      server.on(listen.tls ? 'secureConnection' : 'connection', (socket: Duplex & { remoteAddress?: string }) => {
        if (this.admitSocket(socket)) this.upgradeDeadline(socket, upgradeTimeoutMs)
      })
      this.ownsServer = true
    }
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
      // As Node answers without a listener: 408 for a request not complete in time (slowloris), else 400.
      const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request'
      if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy())
      else socket.destroy()
      setTimeout(() => socket.destroy(), 1_000).unref?.()
    })
    const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => this.upgrade(request, socket, head)
    server.on('upgrade', onUpgrade)
    this.detachUpgrade = () => server.off('upgrade', onUpgrade)
    this.httpServer = server
    if (!server.listening) {
      try {
        await new Promise<void>((resolve, reject) => {
          const onError = (error: Error): void => reject(listenError(error, host, listen.port ?? 0))
          server.once('error', onError)
          server.listen(listen.port ?? 0, host, () => {
            server.off('error', onError)
            resolve()
          })
        })
      } catch (error) {
        // Nothing bound: forget the server, so a later listen (another port) works.
        this.detachUpgrade()
        this.detachUpgrade = undefined
        this.httpServer = undefined
        this.ownsServer = false
        throw error
      }
    }
    const bound = server.address() as AddressInfo
    const scheme = 'setSecureContext' in server ? 'wss' : 'ws'
    const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address
    return `${scheme}://${shownHost}:${bound.port}${this.path}`
  }

  /** Counts a new socket against the limits; over them it is answered 503 and closed. */
  private admitSocket(socket: Duplex & { remoteAddress?: string }): boolean {
    const limiter = this.limiter!
    const address = addressOf(socket)
    const refusal = limiter.admit(address)
    if (refusal !== undefined) {
      this.refusedSockets.add(socket)
      refuseWith503(socket, refusal)
      return false
    }
    this.counted.add(socket)
    socket.once('close', () => limiter.release(address))
    return true
  }

  /**
   * A socket of our server must ask to upgrade within `timeoutMs`, else it
   * is answered 408 and closed (Node's own headers timeout does not end a
   * socket that sent part of a request line and stopped).
   */
  private upgradeDeadline(socket: Duplex, timeoutMs: number): void {
    const timer = setTimeout(() => {
      this.deadlines.delete(socket)
      if (socket.destroyed) return
      socket.on('error', () => socket.destroy())
      if (socket.writable) socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', () => socket.destroy())
      setTimeout(() => socket.destroy(), 1_000).unref?.()
    }, timeoutMs)
    timer.unref?.()
    this.deadlines.set(socket, timer)
    socket.once('close', () => {
      clearTimeout(timer)
      this.deadlines.delete(socket)
    })
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy())
    const deadline = this.deadlines.get(socket)
    if (deadline) {
      clearTimeout(deadline)
      this.deadlines.delete(socket)
    }
    if (this.refusedSockets.has(socket)) {
      socket.destroy()
      return
    }
    // A server passed in: its sockets are counted when they ask to upgrade.
    if (!this.counted.has(socket) && !this.admitSocket(socket as Duplex & { remoteAddress?: string })) return
    let pathname: string
    try {
      pathname = new URL(request.url ?? '/', 'http://localhost').pathname
    } catch {
      socket.destroy()
      return
    }
    if (!this.stopped && pathMatches(pathname, this.path)) {
      this.wss.handleUpgrade(request, socket, head, (ws) => {
        const remote = `ws://${request.socket.remoteAddress ?? '?'}:${request.socket.remotePort ?? 0}`
        const connection = this.track(
          new WebSocketConnection(ws, 'inbound', remote, { ...this.connectionOptions(), rawSocket: socket, frameTimeoutMs: this.frameTimeoutMs }),
        )
        this.events.emit('connection', connection)
      })
      return
    }
    for (const [mount, handler] of this.routes) {
      if (pathMatches(pathname, mount)) {
        try {
          handler(request, socket, head)
        } catch {
          socket.destroy()
        }
        return
      }
    }
    this.notFound(socket)
  }

  /**
   * Answers an upgrade with this server's 404 for a path it does not serve
   * (a mounted route refuses with it what must look like nothing there).
   */
  notFound(socket: Duplex): void {
    if (socket.destroyed) return
    // Say where the protocol is, so a client that dialled the wrong path can tell its user.
    const body = `no WebSocket endpoint here; Concord peers listen at ${this.path}\n`
    socket.end(
      `HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain\r\n${CONCORD_PATH_HEADER}: ${this.path}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
  }

  private connectionOptions(): { heartbeatIntervalMs: number; highWaterMark: number } {
    return { heartbeatIntervalMs: this.heartbeatIntervalMs, highWaterMark: this.highWaterMark }
  }

  private track(connection: WebSocketConnection): WebSocketConnection {
    this.connections.add(connection)
    connection.events.once('close', () => this.connections.delete(connection))
    return connection
  }

  /** Opens a connection to a `ws://` or `wss://` URL. Never put credentials in the URL: the sync handshake carries them. */
  dial(address: string, options: WebSocketDialOptions = {}): Promise<Connection> {
    if (this.stopped) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'transport stopped'))
    if (options.signal?.aborted) return Promise.reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
    try {
      parseWebSocketUrl(address)
    } catch (error) {
      return Promise.reject(error)
    }
    return new Promise<Connection>((resolve, reject) => {
      let ws: WebSocket
      try {
        const tls = options.tls ?? this.options.tls
        ws = new WebSocket(address, {
          maxPayload: this.maxPayload,
          handshakeTimeout: this.options.dialTimeoutMs ?? 10_000,
          ca: tls?.ca as string | Buffer | Array<string | Buffer> | undefined,
          rejectUnauthorized: tls?.rejectUnauthorized,
        })
      } catch (error) {
        reject(new ConcordError(ErrorCodes.INVALID_ARGUMENT, `bad WebSocket URL ${address}: ${(error as Error).message}`, { cause: error }))
        return
      }
      let settled = false
      const fail = (error: ConcordError): void => {
        if (settled) return
        settled = true
        options.signal?.removeEventListener('abort', onAbort)
        ws.removeAllListeners()
        ws.on('error', () => {})
        ws.terminate()
        reject(error)
      }
      const onAbort = (): void => fail(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      options.signal?.addEventListener('abort', onAbort, { once: true })
      ws.once('error', (error) => fail(socketError(address, error)))
      ws.once('unexpected-response', (_request, response) => fail(unexpectedResponseError(address, response)))
      ws.once('close', () => fail(new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${address}: closed during the handshake`)))
      ws.once('open', () => {
        if (settled) return
        settled = true
        options.signal?.removeEventListener('abort', onAbort)
        ws.removeAllListeners()
        if (this.stopped) {
          ws.terminate()
          reject(new ConcordError(ErrorCodes.CLOSED, 'transport stopped'))
          return
        }
        resolve(this.track(new WebSocketConnection(ws, 'outbound', address, this.connectionOptions())))
      })
    })
  }

  /** Closes every connection, stops accepting, and closes the server if this transport created it. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    for (const connection of [...this.connections]) connection.close('transport stopped')
    this.detachUpgrade?.()
    this.wss.close()
    const server = this.httpServer
    if (server && this.ownsServer) {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections?.()
      })
    }
  }
}
