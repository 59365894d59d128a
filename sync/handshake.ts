/**
 * The handshake half of a sync session (see sync/PROTOCOL.md): what this
 * side offers in HELLO, the protocol version both sides speak, and whether
 * the remote HELLO was accepted and our HELLO-OK received. The session
 * drives it; this module holds its state and rules.
 */
import type { HelloMessage, Message, PeerId, RefuseReason } from './messages.ts'
import type { NameFilter } from './names.ts'

/** The handshake state of one session. */
export class Handshake {
  private remoteHello: HelloMessage | undefined
  private helloOkReceived = false

  constructor(
    /** Lowest protocol version this side speaks. */
    readonly minVersion: number,
    /** Highest protocol version this side speaks. */
    readonly maxVersion: number,
  ) {}

  /** The remote's HELLO, once accepted. */
  get remote(): HelloMessage | undefined {
    return this.remoteHello
  }

  /** Whether the remote HELLO was accepted and our HELLO-OK received: the session may open. */
  get complete(): boolean {
    return this.remoteHello !== undefined && this.helloOkReceived
  }

  /** The protocol version in use (once the remote HELLO was accepted). */
  get version(): number {
    return Math.min(this.maxVersion, this.remoteHello!.maxVersion)
  }

  /** The HELLO this side sends. */
  hello(peerId: PeerId, token: string, filter: NameFilter, maxFrameBytes: number, window: number): Message {
    return {
      type: 'hello', minVersion: this.minVersion, maxVersion: this.maxVersion, peerId,
      token, filter, maxFrameBytes, window, extensions: [],
    }
  }

  /** The version both sides speak, or a refusal message when their ranges do not meet. */
  negotiate(hello: HelloMessage): { readonly version: number } | { readonly refusal: string } {
    const version = Math.min(this.maxVersion, hello.maxVersion)
    if (version < Math.max(this.minVersion, hello.minVersion)) {
      return { refusal: `incompatible protocol versions: remote speaks ${hello.minVersion}..${hello.maxVersion}, this peer ${this.minVersion}..${this.maxVersion}` }
    }
    return { version }
  }

  /**
   * Checks a remote HELLO: the versions first, then the credentials
   * (`authenticate`; a throw counts as a refusal). Does not accept it.
   */
  async check(
    hello: HelloMessage,
    authenticate: (peer: PeerId, token: string) => boolean | Promise<boolean>,
  ): Promise<{ readonly version: number } | { readonly refusal: { readonly reason: RefuseReason; readonly message: string } }> {
    const negotiated = this.negotiate(hello)
    if ('refusal' in negotiated) return { refusal: { reason: 'version', message: negotiated.refusal } }
    let ok = false
    try {
      ok = await authenticate(hello.peerId, hello.token)
    } catch {
      ok = false
    }
    return ok ? negotiated : { refusal: { reason: 'auth', message: `credentials refused for peer "${hello.peerId}"` } }
  }

  /** Records the remote HELLO as accepted. */
  accept(hello: HelloMessage): void {
    this.remoteHello = hello
  }

  /** Records HELLO-OK; false if one came before (the second is unexpected). */
  helloOk(): boolean {
    if (this.helloOkReceived) return false
    this.helloOkReceived = true
    return true
  }
}

