/**
 * One browser `WebSocket` as a transport {@link Connection}: binary frames
 * only (a text frame ends the connection), every failure turned into one
 * `close` event, and send backpressure by `bufferedAmount` (a browser's
 * `send` takes no callback). A browser cannot send pings: the serving peer
 * pings and the browser answers by itself, so the server drops a page that
 * vanished; this side notices a dead server when the socket closes.
 */
import { ConnectionEmitter } from '../connection-events.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { Connection } from '../transport.ts'
import { closeReason, OPEN, type WebSocketLike, type WebSocketLikeEvents } from './websocket-like.ts'

/** Options of a {@link BrowserWebSocketConnection}. */
export interface BrowserWebSocketConnectionOptions {
  /** Above this many buffered bytes, `send` waits for the buffer to drain before resolving. */
  readonly highWaterMark: number
  /** Largest frame taken; a larger one ends the connection (a browser cannot refuse it before it arrives). */
  readonly maxPayload: number
}

let nextId = 0

/** A {@link Connection} over an open WHATWG WebSocket. */
export class BrowserWebSocketConnection implements Connection {
  readonly events = new ConnectionEmitter()
  readonly id: string
  readonly direction = 'outbound' as const
  private isOpen = true
  private readonly detach: () => void

  constructor(
    private readonly socket: WebSocketLike,
    readonly remoteAddress: string,
    private readonly options: BrowserWebSocketConnectionOptions,
  ) {
    this.id = `ws-browser-outbound-${++nextId}`
    socket.binaryType = 'arraybuffer'
    const onMessage = (event: WebSocketLikeEvents['message']): void => {
      if (!this.isOpen) return
      const data = event.data
      if (!(data instanceof ArrayBuffer)) {
        // Only binary frames are part of the protocol: a text frame ends this connection only.
        this.close(typeof data === 'string' ? 'text frame received' : 'unexpected frame type')
        return
      }
      if (data.byteLength > this.options.maxPayload) {
        this.close(`frame of ${data.byteLength} bytes over the limit of ${this.options.maxPayload}`)
        return
      }
      this.events.deliver(new Uint8Array(data))
    }
    let failed = false
    const onClose = (event: WebSocketLikeEvents['close']): void => {
      const why = event.reason.length > 0 ? event.reason : `closed (${event.code})`
      this.ended(failed ? `socket error; ${why}` : why)
    }
    const onError = (): void => {
      // A browser says nothing more of an error; the close event (with its code) always follows.
      failed = true
    }
    socket.addEventListener('message', onMessage)
    socket.addEventListener('close', onClose)
    socket.addEventListener('error', onError)
    this.detach = () => {
      socket.removeEventListener('message', onMessage)
      socket.removeEventListener('close', onClose)
      socket.removeEventListener('error', onError)
    }
  }

  get open(): boolean {
    return this.isOpen
  }

  /** Bytes queued in the socket and not yet written. */
  get bufferedAmount(): number {
    return this.socket.bufferedAmount
  }

  send(frame: Uint8Array): Promise<void> {
    // A browser silently drops what is sent on a closing socket: refuse it instead.
    if (!this.isOpen || this.socket.readyState !== OPEN) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, `connection ${this.id} is closed`))
    try {
      this.socket.send(frame)
    } catch (error) {
      return Promise.reject(new ConcordError(ErrorCodes.CLOSED, `send failed: ${(error as Error)?.message ?? String(error)}`, { cause: error }))
    }
    return this.socket.bufferedAmount > this.options.highWaterMark ? this.drain() : Promise.resolve()
  }

  private async drain(): Promise<void> {
    while (this.isOpen && this.socket.bufferedAmount > this.options.highWaterMark) {
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    if (!this.isOpen) throw new ConcordError(ErrorCodes.CLOSED, `connection ${this.id} is closed`)
  }

  close(reason?: string): void {
    if (!this.isOpen) return
    this.ended(reason)
    try {
      this.socket.close(1000, closeReason(reason))
    } catch {
      // already closing
    }
  }

  private ended(reason?: string): void {
    if (!this.isOpen) return
    this.isOpen = false
    this.detach()
    this.events.emit('close', { reason })
  }
}
