/**
 * A raw ws client on a peer's /concord endpoint for the peer suites: it
 * records every decoded frame and the close, and can run the handshake (the
 * protocol's own Handshake, protocol 2: nonces and AUTH proofs) as any peer
 * id with any secret, then send whatever it likes (what a hostile or
 * careless peer can do).
 */
import { WebSocket } from 'ws'
import { newNonce } from '../../../sync/credentials.ts'
import { Handshake, type HandshakeIo } from '../../../sync/handshake.ts'
import { MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, decodeMessage, encodeMessage, type DecodedMessage, type Message } from '../../../sync/messages.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { until } from '../../helpers/wait.ts'

/** A connected raw client. */
export interface RawClient {
  readonly ws: WebSocket
  /** Every frame received that decodes, in order. */
  readonly received: DecodedMessage[]
  /** Resolves with the close code. */
  readonly closed: Promise<number>
  /** Encodes and sends one message. */
  send(message: Message): Promise<void>
}

/**
 * Opens a raw client on `url`; with `handshake`, completes the handshake as
 * `as` (default `raw`, no secret; HELLO `extensions` such as presence),
 * trusting the server.
 */
export async function rawClient(
  url: string,
  handshake: boolean,
  as: { peer?: string; token?: string; extensions?: Array<{ key: string; value: Uint8Array }> } = {},
): Promise<RawClient> {
  const ws = new WebSocket(url)
  const received: DecodedMessage[] = []
  const handshaker = new Handshake({
    minVersion: MIN_PROTOCOL_VERSION,
    maxVersion: PROTOCOL_VERSION,
    agentId: agentId(as.peer ?? 'raw'),
    token: as.token ?? '',
    legacyBearer: false,
    provesFirst: true,
    binding: new Uint8Array(0),
    nonce: newNonce(),
  })
  const io: HandshakeIo = {
    send: (message) => void sendFrame(ws, encodeMessage(message)).catch(() => undefined),
    refuse: () => ws.close(),
    authenticate: () => true,
    active: () => ws.readyState === WebSocket.OPEN,
    unexpected: () => undefined,
    accepted: () => undefined,
  }
  // Listening from the start: the server's HELLO may arrive in the same packet as the upgrade.
  ws.on('message', (data: Buffer) => {
    let message: DecodedMessage
    try {
      message = decodeMessage(new Uint8Array(data))
    } catch {
      return /* not ours to judge */
    }
    received.push(message)
    if (handshake && (message.type === 'hello' || message.type === 'auth')) void handshaker.receive(message, io)
  })
  ws.on('error', () => {
    /* the close follows */
  })
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)))
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  const client: RawClient = { ws, received, closed, send: (message) => sendFrame(ws, encodeMessage(message)) }
  if (handshake) {
    await client.send(handshaker.hello({}, 1 << 20, 64, as.extensions))
    await until(() => received.some((m) => m.type === 'hello-ok'), 'the peer accepts the raw client')
  }
  return client
}

/** Sends one frame; resolves once written. */
export function sendFrame(ws: WebSocket, frame: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => ws.send(frame, (error) => (error ? reject(error) : resolve())))
}
