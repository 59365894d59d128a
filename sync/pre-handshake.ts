/**
 * What a remote may send before its HELLO is accepted (see sync/PROTOCOL.md,
 * "Flow control and limits"): one HELLO of at most `maxHelloBytes`, one AUTH
 * (protocol 2), one HELLO-OK and REFUSE, each small. A peer that speaks the
 * protocol sends nothing else before it has our HELLO-OK, which we send only
 * once its credentials passed. Anything else (a data frame, a chunk, a second HELLO,
 * an oversized one) closes the connection, before it is decoded: an
 * unauthenticated peer can make this side hold or parse nothing beyond one
 * bounded HELLO. Frames are screened by their first two bytes only.
 */
import { FRAME_FORMAT, MessageType, type RefuseReason } from './messages.ts'

/** Default largest HELLO accepted (a filter of a few thousand short names fits). */
export const DEFAULT_MAX_HELLO_BYTES = 64 * 1024

/** Largest HELLO-OK: envelope, type, a version number. */
const MAX_HELLO_OK_BYTES = 16
/** Largest AUTH: envelope, type, a proof of 0 or 32 bytes with its length. */
const MAX_AUTH_BYTES = 64
/** Largest REFUSE: a reason and a message of at most 4096 bytes (writers send 1000 characters). */
const MAX_REFUSE_BYTES = 8 * 1024

/** Why a frame closes the connection. */
export interface PreHandshakeRefusal {
  readonly reason: RefuseReason
  readonly message: string
}

/** Screens the frames a remote sends before its HELLO is accepted. */
export class PreHandshakeGate {
  private helloSeen = false
  private helloOkSeen = false
  private authSeen = false

  constructor(private readonly maxHelloBytes: number = DEFAULT_MAX_HELLO_BYTES) {}

  /** `undefined` when `frame` may be decoded, else why the connection is refused. */
  screen(frame: Uint8Array): PreHandshakeRefusal | undefined {
    if (frame.length < 2) return { reason: 'protocol', message: `a frame of ${frame.length} bytes before the handshake` }
    if (frame[0] !== FRAME_FORMAT) {
      return { reason: 'version', message: `unknown frame format ${frame[0]}; this peer speaks frame format ${FRAME_FORMAT}` }
    }
    switch (frame[1]) {
      case MessageType.hello:
        if (this.helloSeen) return { reason: 'protocol', message: 'a second HELLO' }
        if (frame.length > this.maxHelloBytes) {
          return { reason: 'limit', message: `a HELLO of ${frame.length} bytes, over the limit of ${this.maxHelloBytes}` }
        }
        this.helloSeen = true
        return undefined
      case MessageType.helloOk:
        if (this.helloOkSeen) return { reason: 'protocol', message: 'a second HELLO-OK' }
        if (frame.length > MAX_HELLO_OK_BYTES) return { reason: 'protocol', message: `a HELLO-OK of ${frame.length} bytes` }
        this.helloOkSeen = true
        return undefined
      case MessageType.auth:
        if (this.authSeen) return { reason: 'protocol', message: 'a second AUTH' }
        if (frame.length > MAX_AUTH_BYTES) return { reason: 'protocol', message: `an AUTH of ${frame.length} bytes` }
        this.authSeen = true
        return undefined
      case MessageType.refuse:
        return frame.length > MAX_REFUSE_BYTES ? { reason: 'protocol', message: `a REFUSE of ${frame.length} bytes` } : undefined
      default:
        return { reason: 'protocol', message: `a frame of type ${frame[1]} before the handshake (only HELLO, AUTH, HELLO-OK and REFUSE may come first)` }
    }
  }
}
