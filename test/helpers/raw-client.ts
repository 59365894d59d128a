/**
 * A raw WebSocket client that speaks as much of the sync protocol as a test
 * of bad input needs: frames out as given, frames in decoded where they
 * decode, and the protocol-2 handshake (HELLO with a nonce, AUTH with the
 * proof of a secret) done by hand.
 */
import { WebSocket } from 'ws'
import { Encoder } from '../../crdt/codec.ts'
import { NONCE_EXTENSION, handshakeProof, helloNonce, newNonce } from '../../sync/credentials.ts'
import { decodeMessage, encodeMessage, type DecodedMessage } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { until } from './wait.ts'

/** A raw WebSocket to the server: frames in (decoded where they decode), frames out. */
export interface RawClient {
  readonly ws: WebSocket
  readonly received: DecodedMessage[]
  /** Resolves when the socket closes, with the close code. */
  readonly closed: Promise<number>
  isClosed(): boolean
  send(frame: Uint8Array): void
}

/** Opens a raw WebSocket (`localAddress`: the loopback address to send from, e.g. 127.0.0.2). */
export async function rawClient(url: string, options: { localAddress?: string } = {}): Promise<RawClient> {
  const ws = new WebSocket(url, { localAddress: options.localAddress })
  const received: DecodedMessage[] = []
  let isClosed = false
  ws.on('message', (data: Buffer) => {
    try {
      received.push(decodeMessage(new Uint8Array(data)))
    } catch {
      // chunks of answers, or frames of a newer peer: not needed here
    }
  })
  ws.on('error', () => {})
  const closed = new Promise<number>((resolve) =>
    ws.once('close', (code) => {
      isClosed = true
      resolve(code)
    }),
  )
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('unexpected-response', (_request, response) => reject(new Error(`HTTP ${response.statusCode}`)))
    ws.once('error', reject)
  })
  return {
    ws,
    received,
    closed,
    isClosed: () => isClosed,
    send: (frame) => {
      if (ws.readyState === ws.OPEN) ws.send(frame)
    },
  }
}

/** The HELLO of a raw client (protocol 2: a fresh nonce; the secret is proved in AUTH, never sent). */
export function helloFrame(id: string, nonce: Uint8Array = newNonce()): Uint8Array {
  return encodeMessage({
    type: 'hello',
    minVersion: 1,
    maxVersion: 2,
    agentId: agentId(id),
    token: '',
    filter: {},
    maxFrameBytes: 1 << 20,
    window: 64,
    extensions: [{ key: NONCE_EXTENSION, value: nonce }],
  })
}

/**
 * A raw client's side of the handshake, up to its AUTH: HELLO, the server's
 * HELLO, our AUTH proving `secret` (the dialer proves first). Returns once
 * the AUTH is sent (the server's answer comes next).
 */
export async function sendHelloAndAuth(client: RawClient, id: string, secret: string): Promise<void> {
  const nonce = newNonce()
  client.send(helloFrame(id, nonce))
  await until(() => client.received.some((m) => m.type === 'hello') || client.isClosed(), `the server's HELLO to ${id}`)
  const hello = client.received.find((m) => m.type === 'hello')
  if (hello?.type !== 'hello') throw new Error(`no HELLO from the server: ${JSON.stringify(client.received)}`)
  const proof = handshakeProof(secret, {
    version: Math.min(2, hello.maxVersion),
    proverId: id,
    verifierId: hello.agentId,
    proverNonce: nonce,
    verifierNonce: helloNonce(hello)!,
    binding: new Uint8Array(0),
  })
  client.send(encodeMessage({ type: 'auth', proof }))
}

/** Completes the handshake on a raw client: HELLO and AUTH, the server's HELLO-OK, our HELLO-OK. */
export async function handshake(client: RawClient, id: string, secret: string): Promise<void> {
  await sendHelloAndAuth(client, id, secret)
  await until(() => client.received.some((m) => m.type === 'hello-ok') || client.isClosed(), `the server accepts ${id}`)
  if (client.isClosed()) throw new Error(`the server refused ${id}: ${JSON.stringify(client.received)}`)
  client.send(encodeMessage({ type: 'hello-ok', version: 2 }))
}

/** Unsigned LEB128, as the codec writes it. */
export function varUint(value: number): number[] {
  return [...new Encoder(10).writeVarUint(value).finish()]
}

/** A frame of `type` with a raw payload. */
export function frame(type: number, ...payload: number[]): Uint8Array {
  return new Uint8Array([1, type, ...payload])
}
