/**
 * The WebSocket transport (`ws`): a server on one path of an HTTP(S) server
 * (its own, or one passed in), other paths routable to other protocols
 * (y-websocket at `/yjs`), and a client `dial(url)`. Frames are binary
 * WebSocket messages; `maxPayload` bounds them (an oversized or malformed
 * frame closes only that client's connection).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocket, WebSocketServer } from 'ws'
import { Emitter, type Unsubscribe } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { AbortOptions, Connection, Transport, TransportEvents } from '../transport.ts'
import { WebSocketConnection } from './connection.ts'
import { CONCORD_PATH_HEADER, listenError, parseWebSocketUrl, socketError, unexpectedResponseError } from './dial-errors.ts'

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
}

/** Handles an HTTP upgrade for a mounted path (another WebSocket protocol). */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void

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
  private readonly routes = new Map<string, UpgradeHandler>()
  private readonly connections = new Set<WebSocketConnection>()
  private readonly wss: WebSocketServer
  private httpServer: HttpServer | HttpsServer | undefined
  private ownsServer = false
  private detachUpgrade: (() => void) | undefined
  private stopped = false

  constructor(private readonly options: WebSocketTransportOptions = {}) {
    this.path = options.path ?? '/concord'
    this.maxPayload = options.maxPayload ?? 1024 * 1024 + 1024
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 15_000
    this.highWaterMark = options.highWaterMark ?? 4 * 1024 * 1024
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

  /** Listens (or attaches to `options.server`); resolves with the `ws://` or `wss://` URL of the Concord path. */
  async listen(address: unknown = {}, options: AbortOptions = {}): Promise<string> {
    if (this.stopped) throw new ConcordError(ErrorCodes.CLOSED, 'transport stopped')
    if (this.httpServer) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'already listening')
    if (options.signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'aborted')
    const listen = (address ?? {}) as WebSocketListenOptions
    const host = listen.host ?? '127.0.0.1'
    let server: HttpServer | HttpsServer
    if (listen.server) {
      server = listen.server
    } else {
      server = listen.tls ? createHttpsServer({ key: listen.tls.key, cert: listen.tls.cert }) : createHttpServer()
      server.on('request', (_request, response) => {
        response.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket only\n')
      })
      this.ownsServer = true
    }
    server.on('clientError', (_error, socket) => socket.destroy())
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

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy())
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
        const connection = this.track(new WebSocketConnection(ws, 'inbound', remote, this.connectionOptions()))
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
    socket.end(`HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain\r\n${CONCORD_PATH_HEADER}: ${this.path}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
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
