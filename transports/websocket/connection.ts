/**
 * One WebSocket as a transport {@link Connection}: binary frames only, every
 * socket error turned into one `close` event, send backpressure through the
 * `ws` send callback, a ping/pong heartbeat that ends a silent peer, and
 * (inbound) a frame timeout that ends a peer sending a frame byte by byte.
 */
import type { Duplex } from 'node:stream'
import type { WebSocket } from 'ws'
import { ConnectionEmitter } from '../connection-events.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { Connection } from '../transport.ts'

/** Options of a {@link WebSocketConnection}. */
export interface WebSocketConnectionOptions {
  /** Ping every this many ms; a peer that answered no ping since the last one is dropped (0: off). */
  readonly heartbeatIntervalMs: number
  /** Above this many buffered bytes, `send` waits for the buffer to drain before resolving. */
  readonly highWaterMark: number
  /**
   * The socket under the WebSocket (inbound connections): with
   * `frameTimeoutMs`, bytes that arrive start a timer that only a complete
   * message (or ping, pong) stops; a frame still incomplete when it fires
   * ends the connection.
   */
  readonly rawSocket?: Duplex | undefined
  readonly frameTimeoutMs?: number | undefined
}

let nextId = 0

/** A {@link Connection} over a `ws` WebSocket. */
export class WebSocketConnection implements Connection {
  readonly events = new ConnectionEmitter()
  readonly id: string
  private isOpen = true
  private alive = true
  private heartbeat: ReturnType<typeof setInterval> | undefined
  private frameTimer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly socket: WebSocket,
    readonly direction: 'inbound' | 'outbound',
    readonly remoteAddress: string,
    options: WebSocketConnectionOptions,
  ) {
    this.id = `ws-${direction}-${++nextId}`
    this.highWaterMark = options.highWaterMark
    socket.binaryType = 'nodebuffer'
    const frameTimeoutMs = options.frameTimeoutMs ?? 0
    if (options.rawSocket && frameTimeoutMs > 0) {
      // Prepended: it runs before the WebSocket parser, which stops the timer for every frame the bytes complete.
      options.rawSocket.prependListener('data', () => {
        if (this.frameTimer || !this.isOpen) return
        this.frameTimer = setTimeout(() => {
          this.frameTimer = undefined
          this.ended(`frame timeout: a frame took longer than ${frameTimeoutMs} ms to arrive`)
          socket.terminate()
        }, frameTimeoutMs)
        this.frameTimer.unref?.()
      })
    }
    socket.on('message', (data, isBinary) => {
      this.frameDone()
      this.alive = true
      if (!this.isOpen) return
      if (!isBinary) {
        // Only binary frames are part of the protocol: a text frame ends this connection only.
        this.close('text frame received')
        return
      }
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer)
      this.events.deliver(new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength))
    })
    socket.on('pong', () => {
      this.frameDone()
      this.alive = true
    })
    socket.on('ping', () => {
      this.frameDone()
      this.alive = true
    })
    socket.on('error', (error) => {
      // Bad frames, oversized frames, resets: this connection ends; nothing escapes.
      this.ended(`socket error: ${error.message}`)
      socket.terminate()
    })
    socket.on('close', (code, reason) => {
      this.ended(reason.length > 0 ? reason.toString('utf8') : `closed (${code})`)
    })
    if (options.heartbeatIntervalMs > 0) {
      this.heartbeat = setInterval(() => {
        if (!this.alive) {
          this.ended('heartbeat timeout')
          socket.terminate()
          return
        }
        this.alive = false
        try {
          socket.ping()
        } catch {
          // the close event follows
        }
      }, options.heartbeatIntervalMs)
      this.heartbeat.unref?.()
    }
  }

  private readonly highWaterMark: number

  get open(): boolean {
    return this.isOpen
  }

  /** Bytes queued in the socket and not yet written. */
  get bufferedAmount(): number {
    return this.socket.bufferedAmount
  }

  /**
   * Queues `frame` and resolves once it is accepted: at once while the
   * socket's buffer is within `highWaterMark`, else once it drained below.
   * The frames of one event-loop turn leave in one socket write (see
   * {@link corkTurn}). A write that fails ends the connection (its `close`
   * event), and later sends reject with `CONCORD_CLOSED`.
   */
  send(frame: Uint8Array): Promise<void> {
    if (!this.isOpen) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, `connection ${this.id} is closed`))
    try {
      this.corkTurn()
      this.socket.send(frame, { binary: true }, (error) => {
        if (error) this.failed(error)
      })
    } catch (error) {
      return Promise.reject(new ConcordError(ErrorCodes.CLOSED, `send failed: ${(error as Error).message}`, { cause: error }))
    }
    return this.socket.bufferedAmount > this.highWaterMark ? this.drain() : Promise.resolve()
  }

  /** Whether the socket is corked until the end of this event-loop turn. */
  private corked = false

  /**
   * Corks the TCP socket under the WebSocket (ws keeps it as `_socket`)
   * until the check phase of this event-loop turn: every frame sent
   * meanwhile (a commit and its PROVENANCE, the relays and ACKs of the
   * messages read in one poll) leaves in one `writev` instead of one write
   * per frame, which on loopback costs about as much as the frame's work.
   * Nothing waits longer than the turn it was sent in.
   */
  private corkTurn(): void {
    if (this.corked) return
    const raw = (this.socket as unknown as { _socket?: Duplex | null })._socket
    if (!raw || typeof raw.cork !== 'function' || raw.destroyed) return
    raw.cork()
    this.corked = true
    setImmediate(() => {
      this.corked = false
      raw.uncork()
    })
  }

  /** A write failed: the connection ends (once), whatever else happens. */
  private failed(error: Error): void {
    if (!this.isOpen) return
    this.ended(`send failed: ${error.message}`)
    this.socket.terminate()
  }

  private async drain(): Promise<void> {
    while (this.isOpen && this.socket.bufferedAmount > this.highWaterMark) {
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    if (!this.isOpen) throw new ConcordError(ErrorCodes.CLOSED, `connection ${this.id} is closed`)
  }

  close(reason?: string): void {
    if (!this.isOpen) return
    this.ended(reason)
    try {
      // A close reason is limited to 123 bytes by the WebSocket protocol.
      this.socket.close(
        1000,
        Buffer.from(reason ?? '', 'utf8')
          .subarray(0, 120)
          .toString('utf8')
          .replace(/\uFFFD+$/, ''),
      )
    } catch {
      this.socket.terminate()
    }
    const socket = this.socket
    setTimeout(() => {
      if (socket.readyState !== socket.CLOSED) socket.terminate()
    }, 2_000).unref?.()
  }

  /** Ends the connection at once (no close handshake): tests use it to mimic a crash. */
  terminate(reason = 'terminated'): void {
    this.ended(reason)
    this.socket.terminate()
  }

  /** A whole frame arrived: the frame timer stops. */
  private frameDone(): void {
    if (this.frameTimer) clearTimeout(this.frameTimer)
    this.frameTimer = undefined
  }

  private ended(reason?: string): void {
    if (!this.isOpen) return
    this.isOpen = false
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.heartbeat = undefined
    this.frameDone()
    this.events.emit('close', { reason })
  }
}
