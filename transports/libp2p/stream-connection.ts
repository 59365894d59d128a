/**
 * One Concord {@link Connection} over one libp2p stream speaking
 * `/concord/sync/1.0.0` (length-prefixed frames, see frame-codec.ts).
 *
 * libp2p 3 streams are event based (`message`, `drain`, `end`, `close`
 * events; `send()` returns false when the muxer's window is full). This
 * wrapper turns them into the transport contract:
 * - `send` is serialised: a frame is handed to the stream only after the
 *   previous one was accepted, and a `send` that filled the stream's window
 *   resolves only after `drain` (Yamux flow control: the remote's reading
 *   paces us), so an awaiting caller never queues without bound;
 * - incoming chunks go through a {@link FrameDecoder}; a frame over the limit
 *   or a garbled prefix aborts the stream (the remote gets a reset) and ends
 *   the connection with a `close` event whose reason starts with the code;
 * - `close` emits the one `close` event at once, then closes the stream's
 *   write side gracefully (queued frames are still delivered) and aborts it
 *   if the remote does not finish within `closeTimeoutMs`;
 * - the remote closing its side (`end`: all its frames were delivered), a
 *   reset, or the libp2p connection dropping all end in one `close` event.
 */
import type { Connection as Libp2pConnection, Stream } from '@libp2p/interface'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { ConnectionEmitter } from '../connection-events.ts'
import type { Connection } from '../transport.ts'
import { FrameDecoder, encodeFrame } from './frame-codec.ts'

/** Options of one stream connection. */
export interface StreamConnectionOptions {
  /** Largest frame accepted in either direction, in bytes. */
  readonly maxFrameBytes: number
  /** How long a graceful close may wait for the remote before aborting, in ms. */
  readonly closeTimeoutMs: number
  /** Called when the connection ends (after its `close` event), with whether the local side closed it. */
  readonly onClosed?: (connection: StreamConnection, local: boolean) => void
}

let nextId = 0

/** A Concord connection over a libp2p stream; see the module comment. */
export class StreamConnection implements Connection {
  readonly id: string
  readonly direction: 'inbound' | 'outbound'
  readonly remoteAddress: string
  readonly remoteIdentity: string
  /** When the stream was adopted (ms since epoch). */
  readonly openedAt = Date.now()
  readonly events = new ConnectionEmitter()
  /** Frames and payload bytes through this connection (frames' own bytes, without prefixes). */
  readonly stats = { framesSent: 0, framesReceived: 0, bytesSent: 0, bytesReceived: 0 }

  private readonly stream: Stream
  private readonly options: StreamConnectionOptions
  private readonly decoder: FrameDecoder
  private closed = false
  private sendChain: Promise<void> = Promise.resolve()

  constructor(stream: Stream, connection: Libp2pConnection, options: StreamConnectionOptions) {
    this.stream = stream
    this.options = options
    this.decoder = new FrameDecoder(options.maxFrameBytes)
    this.id = `libp2p-${++nextId}`
    this.direction = stream.direction
    this.remoteAddress = connection.remoteAddr.toString()
    this.remoteIdentity = connection.remotePeer.toString()
    stream.addEventListener('message', (event) => {
      const data = event.data
      this.onChunk(data instanceof Uint8Array ? data : data.subarray())
    })
    stream.addEventListener('end', () => {
      const reason = this.decoder.midFrame ? `${ErrorCodes.PROTOCOL_ERROR}: remote closed the stream mid-frame` : 'closed by the remote peer'
      this.finish(reason, false)
      this.closeStream()
    })
    stream.addEventListener('close', (event) => {
      const reason = event.error ? `stream ended: ${event.error.message}` : 'stream closed'
      this.finish(reason, event.local === true)
    })
    if (stream.status !== 'open') this.finish('stream closed before use', false)
  }

  /** True until closed. */
  get open(): boolean {
    return !this.closed
  }

  /** Sends one frame; resolves once the stream accepted it (see the module comment). */
  send(frame: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError())
    let bytes: Uint8Array
    try {
      bytes = encodeFrame(frame, this.options.maxFrameBytes)
    } catch (error) {
      return Promise.reject(error)
    }
    const result = this.sendChain.then(() => this.write(bytes, frame.byteLength))
    this.sendChain = result.catch(() => undefined)
    return result
  }

  /** Closes the connection (idempotent); queued frames are still delivered. */
  close(reason?: string): void {
    if (this.closed) return
    this.finish(reason ?? 'closed', true)
    this.closeStream()
  }

  /** Ends the connection at once, discarding queued frames (the remote sees a reset). */
  abort(reason: string): void {
    if (!this.closed) this.finish(reason, true)
    this.stream.abort(new ConcordError(ErrorCodes.CLOSED, reason))
  }

  private async write(bytes: Uint8Array, payloadBytes: number): Promise<void> {
    if (this.closed) throw this.closedError()
    try {
      if (this.stream.writableNeedsDrain) await this.stream.onDrain()
      if (this.closed) throw this.closedError()
      const more = this.stream.send(bytes)
      this.stats.framesSent++
      this.stats.bytesSent += payloadBytes
      if (!more) await this.stream.onDrain()
    } catch (error) {
      if (isConcordError(error)) throw error
      this.finish(`send failed: ${(error as Error).message}`, false)
      throw this.closedError(error)
    }
  }

  private onChunk(chunk: Uint8Array): void {
    if (this.closed) return
    let frames: Uint8Array[]
    try {
      frames = this.decoder.push(chunk)
    } catch (error) {
      const code = isConcordError(error) ? error.code : ErrorCodes.DECODE_ERROR
      this.abort(`${code}: ${(error as Error).message}`)
      return
    }
    for (const frame of frames) {
      if (this.closed) return
      this.stats.framesReceived++
      this.stats.bytesReceived += frame.byteLength
      this.events.deliver(frame)
    }
  }

  private closeStream(): void {
    if (this.stream.status !== 'open' || this.stream.writeStatus !== 'writable') return
    this.stream.close({ signal: AbortSignal.timeout(this.options.closeTimeoutMs) }).catch((error: unknown) => {
      this.stream.abort(error instanceof Error ? error : new Error(String(error)))
    })
  }

  private finish(reason: string, local: boolean): void {
    if (this.closed) return
    this.closed = true
    this.events.emit('close', { reason })
    this.options.onClosed?.(this, local)
  }

  private closedError(cause?: unknown): ConcordError {
    return new ConcordError(ErrorCodes.CLOSED, `libp2p connection ${this.id} to ${this.remoteIdentity} is closed`, cause === undefined ? undefined : { cause })
  }
}
