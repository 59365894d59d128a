/**
 * The event emitter of a {@link Connection}: frames that arrive before the
 * first `message` listener is attached are held (up to a bound) and handed
 * to it, so a frame sent by the remote right after the connection opens is
 * never lost in the gap between `dial()` resolving (or the `connection`
 * event) and the caller subscribing.
 */
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import type { ConnectionEvents } from './transport.ts'

/** Frames held for a connection nobody listens to yet. */
const MAX_HELD_FRAMES = 1024
/**
 * Bytes held for a connection nobody listens to yet: the first frames of a
 * session are a HELLO and a HELLO-OK, which fit many times over.
 */
const MAX_HELD_BYTES = 1024 * 1024

/** A connection's emitter that holds early frames for the first listener. */
export class ConnectionEmitter extends Emitter<ConnectionEvents> {
  private held: Uint8Array[] = []
  private heldBytes = 0
  /** Frames dropped because nobody listened and the hold was full. */
  droppedEarlyFrames = 0

  /** Delivers a frame from the wire: to the listeners, or held until one attaches. */
  deliver(frame: Uint8Array): void {
    if (this.listenerCount('message') > 0) {
      this.emit('message', frame)
    } else if (this.held.length < MAX_HELD_FRAMES && this.heldBytes + frame.byteLength <= MAX_HELD_BYTES) {
      this.held.push(frame)
      this.heldBytes += frame.byteLength
    } else {
      this.droppedEarlyFrames++
    }
  }

  override on<K extends keyof ConnectionEvents>(event: K, listener: (payload: ConnectionEvents[K]) => void): Unsubscribe {
    const unsubscribe = super.on(event, listener)
    if (event === 'message' && this.held.length > 0) {
      // Deliver after the caller finished wiring (it may subscribe to `close` or start a handshake next).
      queueMicrotask(() => {
        const frames = this.held
        this.held = []
        this.heldBytes = 0
        for (const frame of frames) this.deliver(frame)
      })
    }
    return unsubscribe
  }
}
