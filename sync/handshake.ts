/**
 * The handshake half of a sync session (see sync/PROTOCOL.md): what this
 * side offers in HELLO, the protocol version both sides speak, the
 * credentials each side presents (protocol 2: an AUTH proof over both fresh
 * nonces; protocol 1: a bearer token in HELLO, accepted only with
 * `legacyBearer`), and whether the remote was accepted and our HELLO-OK
 * received. The session drives it; this module holds its state and rules.
 */
import { constantTimeEqual, handshakeProof, helloNonce, NONCE_EXTENSION, type PresentedCredentials, type ProofInput } from './credentials.ts'
import type { AuthMessage, HelloMessage, Message, RefuseMessage, RefuseReason } from './messages.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import type { NameFilter } from './names.ts'

/** The first protocol version with challenge-response credentials (AUTH). */
export const PROOF_VERSION = 2

/** What the handshake needs to know about this side. */
export interface HandshakeOptions {
  /** Lowest and highest protocol versions this side speaks. */
  readonly minVersion: number
  readonly maxVersion: number
  /** This side's agent id. */
  readonly agentId: AgentId
  /** This side's secret ('' when it has none). */
  readonly token: string
  /** Present `token` in the clear in HELLO and accept a protocol-1 remote's clear token. */
  readonly legacyBearer: boolean
  /** Send our AUTH as soon as the remote HELLO is known (the dialer); else only once the remote's AUTH was accepted. */
  readonly provesFirst: boolean
  /** Channel binding, bound into both proofs (empty when none). */
  readonly binding: Uint8Array
  /** This session's fresh nonce. */
  readonly nonce: Uint8Array
}

/** How the handshake answers through its session. */
export interface HandshakeIo {
  /** Sends a handshake message (AUTH, HELLO-OK). */
  send(message: Message): void
  /** Refuses the connection (REFUSE, then close). */
  refuse(reason: RefuseReason, message: string): void
  /** The host's verdict on what the remote presented. */
  authenticate(peer: AgentId, presented: PresentedCredentials): boolean | Promise<boolean>
  /** Whether the session still runs (it may close while the host decides). */
  active(): boolean
  /** Counts a handshake message that came at the wrong time. */
  unexpected(): void
  /** The remote was accepted (HELLO-OK sent): the session may open. */
  accepted(): void
}

/** A refusal: why, and the message sent in REFUSE. */
export interface Refusal {
  readonly reason: RefuseReason
  readonly message: string
}

/** The handshake state of one session. */
export class Handshake {
  /** The remote HELLO, once received and its versions checked (accepted later). */
  private received: HelloMessage | undefined
  private remoteNonce: Uint8Array | undefined
  private accepted = false
  private earlyAuth: AuthMessage | undefined
  private authReceived = false
  private authSent = false
  private helloOkReceived = false

  constructor(private readonly options: HandshakeOptions) {}

  /** Lowest protocol version this side speaks. */
  get minVersion(): number {
    return this.options.minVersion
  }

  /** Highest protocol version this side speaks. */
  get maxVersion(): number {
    return this.options.maxVersion
  }

  /** The remote's HELLO, once accepted (credentials checked). */
  get remote(): HelloMessage | undefined {
    return this.accepted ? this.received : undefined
  }

  /** Whether the remote was accepted and our HELLO-OK received: the session may open. */
  get complete(): boolean {
    return this.accepted && this.helloOkReceived
  }

  /** The protocol version in use (once the remote HELLO was received). */
  get version(): number {
    return Math.min(this.options.maxVersion, this.received!.maxVersion)
  }

  /**
   * The HELLO this side sends: a fresh nonce from protocol 2 on; the token
   * only as a legacy bearer; then `extensions` (the byte window, presence, ...).
   */
  hello(filter: NameFilter, maxFrameBytes: number, window: number, extensions: HelloMessage['extensions'] = []): Message {
    const { minVersion, maxVersion, agentId, token, legacyBearer, nonce } = this.options
    return {
      type: 'hello',
      minVersion,
      maxVersion,
      agentId,
      token: legacyBearer ? token : '',
      filter,
      maxFrameBytes,
      window,
      extensions: [...(maxVersion >= PROOF_VERSION ? [{ key: NONCE_EXTENSION, value: nonce }] : []), ...extensions],
    }
  }

  /** The version both sides speak, or a refusal message when their ranges do not meet. */
  negotiate(hello: HelloMessage): { readonly version: number } | { readonly refusal: string } {
    const version = Math.min(this.options.maxVersion, hello.maxVersion)
    if (version < Math.max(this.options.minVersion, hello.minVersion)) {
      return {
        refusal: `incompatible protocol versions: remote speaks ${hello.minVersion}..${hello.maxVersion}, this peer ${this.options.minVersion}..${this.options.maxVersion}`,
      }
    }
    return { version }
  }

  /**
   * Handles a remote HELLO or AUTH: checks versions and ids, then
   * credentials (protocol 1: the HELLO's bearer token; protocol 2: the AUTH
   * proof, the dialer proving first), and accepts or refuses through `io`.
   */
  async receive(message: HelloMessage | AuthMessage, io: HandshakeIo): Promise<void> {
    if (message.type === 'auth') {
      const step = this.receiveAuth(message)
      if (step === 'unexpected') io.unexpected()
      if (step === 'check') await this.admit(this.proofCredentials(message), io)
      return
    }
    if (this.received) {
      io.unexpected()
      return
    }
    const verdict = this.receiveHello(message)
    if ('refusal' in verdict) {
      io.refuse(verdict.refusal.reason, verdict.refusal.message)
      return
    }
    if (verdict.version < PROOF_VERSION) {
      await this.admit(this.bearerCredentials(), io)
      return
    }
    if (this.options.provesFirst) this.sendAuth(io)
    const early = this.takeEarlyAuth()
    if (early) await this.receive(early, io)
  }

  /** Asks the host about the remote's credentials; accepts it (our AUTH if we prove second, then HELLO-OK) or refuses. */
  private async admit(presented: PresentedCredentials, io: HandshakeIo): Promise<void> {
    const verdict = await this.authenticate(presented, (peer, credentials) => io.authenticate(peer, credentials))
    if (!io.active()) return
    if ('refusal' in verdict) {
      io.refuse(verdict.refusal.reason, verdict.refusal.message)
      return
    }
    this.accepted = true
    if (this.version >= PROOF_VERSION) this.sendAuth(io)
    io.send({ type: 'hello-ok', version: this.version })
    io.accepted()
  }

  private sendAuth(io: HandshakeIo): void {
    const auth = this.auth()
    if (auth) io.send(auth)
  }

  /**
   * Records the remote HELLO after checking what needs no credentials: the
   * versions, that the remote does not claim our own id, and (protocol 2)
   * its nonce. Does not accept it: its credentials come next.
   */
  private receiveHello(hello: HelloMessage): { readonly version: number } | { readonly refusal: Refusal } {
    const negotiated = this.negotiate(hello)
    if ('refusal' in negotiated) return { refusal: { reason: 'version', message: negotiated.refusal } }
    if (hello.agentId === this.options.agentId) {
      return { refusal: { reason: 'auth', message: `the remote claims this peer's own id "${hello.agentId}"` } }
    }
    if (negotiated.version >= PROOF_VERSION) {
      const nonce = helloNonce(hello)
      if (!nonce) return { refusal: { reason: 'protocol', message: `protocol ${negotiated.version} needs a ${this.options.nonce.length}-byte nonce in HELLO` } }
      if (constantTimeEqual(nonce, this.options.nonce)) return { refusal: { reason: 'auth', message: "the remote HELLO repeats this side's nonce" } }
      this.remoteNonce = nonce
    }
    this.received = hello
    return negotiated
  }

  /** Protocol 1: the credentials of the remote HELLO (its clear token only with `legacyBearer`). */
  private bearerCredentials(): PresentedCredentials {
    const token = this.received!.token
    return this.options.legacyBearer && token.length > 0 ? { scheme: 'bearer', token } : { scheme: 'none' }
  }

  /**
   * Our AUTH (protocol 2): the proof over both nonces and ids, empty when
   * this side has no secret. Undefined if it was sent already.
   */
  private auth(): AuthMessage | undefined {
    if (this.authSent) return undefined
    this.authSent = true
    const { token } = this.options
    return { type: 'auth', proof: token.length > 0 ? handshakeProof(token, this.proofInput('local')) : new Uint8Array(0) }
  }

  /**
   * What to do with a remote AUTH: `check` it now, it was `held` (it came
   * before the HELLO; handed back by {@link takeEarlyAuth}), or it is
   * `unexpected` (protocol 1, a second one).
   */
  private receiveAuth(auth: AuthMessage): 'check' | 'held' | 'unexpected' {
    if (!this.received) {
      if (this.earlyAuth) return 'unexpected'
      this.earlyAuth = auth
      return 'held'
    }
    if (this.version < PROOF_VERSION || this.authReceived) return 'unexpected'
    this.authReceived = true
    return 'check'
  }

  /** An AUTH that came before the remote HELLO, once. */
  private takeEarlyAuth(): AuthMessage | undefined {
    const auth = this.earlyAuth
    this.earlyAuth = undefined
    return auth
  }

  /** The credentials of a remote AUTH: a proof checked against whatever secret the host expects. */
  private proofCredentials(auth: AuthMessage): PresentedCredentials {
    if (auth.proof.length === 0) return { scheme: 'none' }
    const input = this.proofInput('remote')
    return { scheme: 'proof', verify: (secret) => constantTimeEqual(handshakeProof(secret, input), auth.proof) }
  }

  /** Asks `authenticate` about the remote's credentials (a throw counts as a refusal). */
  private async authenticate(
    presented: PresentedCredentials,
    authenticate: (peer: AgentId, presented: PresentedCredentials) => boolean | Promise<boolean>,
  ): Promise<{ readonly ok: true } | { readonly refusal: Refusal }> {
    const peer = this.received!.agentId
    let ok = false
    try {
      ok = (await authenticate(peer, presented)) === true
    } catch {
      ok = false
    }
    if (ok) return { ok }
    let message = `credentials refused for peer "${peer}"`
    if (this.version < PROOF_VERSION && !this.options.legacyBearer && this.received!.token.length > 0) {
      message +=
        ': it speaks protocol 1 only, whose token travels in the clear and can be replayed; this peer takes only the' +
        ' challenge-response of protocol 2 (upgrade that peer, or enable legacyBearer here, over wss:// only)'
    }
    return { refusal: { reason: 'auth', message } }
  }

  /** Records HELLO-OK; false if one came before (the second is unexpected). */
  helloOk(): boolean {
    if (this.helloOkReceived) return false
    this.helloOkReceived = true
    return true
  }

  /** The message of a remote REFUSE, with a hint when a protocol-1 remote wanted our token in the clear. */
  explain(refuse: RefuseMessage): string {
    if (refuse.reason === 'auth' && refuse.maxVersion < PROOF_VERSION && !this.options.legacyBearer && this.options.token.length > 0) {
      return (
        `${refuse.message} (the remote speaks protocol 1 only, which takes the token in the clear; this peer never sends it` +
        ' unless legacyBearer is on, which is safe over wss:// only)'
      )
    }
    return refuse.message
  }

  private proofInput(prover: 'local' | 'remote'): ProofInput {
    const local = { id: this.options.agentId, nonce: this.options.nonce }
    const remote = { id: this.received!.agentId, nonce: this.remoteNonce! }
    const [p, v] = prover === 'local' ? [local, remote] : [remote, local]
    return { version: this.version, proverId: p.id, verifierId: v.id, proverNonce: p.nonce, verifierNonce: v.nonce, binding: this.options.binding }
  }
}
