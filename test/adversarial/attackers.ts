/**
 * The attacker's tools, all through the server's public doors:
 * - {@link openRaw}: a bare WebSocket to `/concord` that sends whatever
 *   frames it is given (no session, no HELLO unless sent by hand);
 * - {@link openRawLibp2p}: the same over a libp2p stream (its own node and
 *   PeerId, the project's stream framing);
 * - {@link openArmed}: a real Concord peer with valid credentials whose
 *   session does the handshake (whatever form it takes), after which the
 *   attacker writes raw frames on the same socket or stream and stops
 *   listening to what comes back (its own session does no work);
 * - {@link attackLoop}: repeats an attack step until stopped.
 * Frames are built with the project's own encoders (sync/messages.ts,
 * crdt/codec.ts), with hand-written counts and lengths where an attack
 * needs them.
 */
import { WebSocket } from 'ws'
import { Emitter } from '../../crdt/emitter.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { createLibp2pTransport } from '../../transports/libp2p/index.ts'
import type { Connection, Transport } from '../../transports/transport.ts'
import { createPeer, StoreSyncHost, type Peer } from '../../peer/index.ts'
import { attachSession, agentId, type SyncConnection, type SyncSession } from '../../sync/index.ts'
import { Encoder } from '../../crdt/codec.ts'
import { TOKENS, type Role } from './fixtures/roles.ts'

/** A bare WebSocket client. */
export interface RawSocket {
  readonly open: boolean
  /** Bytes sent and not yet written to the socket (to pace a flood). */
  readonly buffered: number
  /** Frames and bytes the server sent back. */
  readonly received: { frames: number; bytes: number }
  /** Sends one binary frame; resolves when written (never rejects: a closed socket drops it). */
  send(frame: Uint8Array): Promise<void>
  /** Resolves once closed (by either side). */
  readonly closed: Promise<void>
  close(): void
}

/** Opens a bare WebSocket to `url` (from `localAddress`, any 127.x.y.z, when given). Rejects when the upgrade fails. */
export function openRaw(url: string, options: { localAddress?: string; timeoutMs?: number } = {}): Promise<RawSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress: options.localAddress, handshakeTimeout: options.timeoutMs ?? 10_000, maxPayload: 256 * 1024 * 1024 })
    const received = { frames: 0, bytes: 0 }
    let markClosed!: () => void
    const closed = new Promise<void>((done) => {
      markClosed = done
    })
    ws.on('message', (data: Buffer) => {
      received.frames++
      received.bytes += data.length
    })
    ws.on('close', () => markClosed())
    ws.on('error', (error) => {
      markClosed()
      reject(error)
    })
    ws.once('open', () =>
      resolve({
        get open() {
          return ws.readyState === ws.OPEN
        },
        get buffered() {
          return ws.bufferedAmount
        },
        received,
        send: (frame) =>
          new Promise((done) => {
            if (ws.readyState !== ws.OPEN) return done()
            ws.send(frame, { binary: true }, () => done())
          }),
        closed,
        close: () => ws.terminate(),
      }),
    )
  })
}

/** A dialed connection, the transport that owns it, and the session channel binding it needs (sync/PROTOCOL.md, "Proof"). */
interface Dialed {
  readonly transport: Transport
  readonly connection: Connection
  readonly channelBinding: Uint8Array
}

/** Dials `address`: a multiaddr (starts with `/`) over a fresh libp2p node, else a WebSocket URL. */
async function dial(address: string): Promise<Dialed> {
  if (address.startsWith('/')) {
    const transport = createLibp2pTransport({ autoConnect: false })
    try {
      const connection = await transport.dial(address)
      // libp2p: varString("libp2p") then both PeerIds (as Noise proved them), the smaller first.
      const [first, second] = [transport.peerId, connection.remoteIdentity!].sort()
      return { transport, connection, channelBinding: new Encoder().writeString('libp2p').writeString(first).writeString(second).finish() }
    } catch (error) {
      await transport.stop()
      throw error
    }
  }
  const transport = new WebSocketTransport({ maxPayload: 256 * 1024 * 1024, heartbeatIntervalMs: 0 })
  return { transport, connection: await transport.dial(address), channelBinding: new Uint8Array(0) }
}

/** A raw libp2p Concord stream to `multiaddr` from a node of its own (no session, no HELLO unless sent by hand). */
export async function openRawLibp2p(multiaddr: string): Promise<RawSocket> {
  const { transport, connection } = await dial(multiaddr)
  const received = { frames: 0, bytes: 0 }
  let markClosed!: () => void
  const closed = new Promise<void>((done) => {
    markClosed = done
  })
  connection.events.on('message', (frame) => {
    received.frames++
    received.bytes += frame.length
  })
  connection.events.on('close', () => {
    markClosed()
    void transport.stop()
  })
  return {
    get open() {
      return connection.open
    },
    buffered: 0,
    received,
    send: (frame) => connection.send(frame).catch(() => {}),
    closed,
    close: () => connection.close('attacker done'),
  }
}

/** A connection that hands frames to the session only until muted; the attacker writes on it directly. */
class Tap implements SyncConnection {
  readonly events = new Emitter<{ message: Uint8Array; close: { readonly reason?: string } }>()
  muted = false
  received = { frames: 0, bytes: 0, framesWithWatched: 0 }
  constructor(
    private readonly inner: Connection,
    private readonly watched?: Buffer,
  ) {
    inner.events.on('message', (frame) => {
      this.received.frames++
      this.received.bytes += frame.length
      if (this.watched && Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).includes(this.watched)) this.received.framesWithWatched++
      if (!this.muted) this.events.emit('message', frame)
    })
    inner.events.on('close', (event) => this.events.emit('close', event))
  }
  get direction() {
    return this.inner.direction
  }
  get open() {
    return this.inner.open
  }
  send(frame: Uint8Array): Promise<void> {
    return this.inner.send(frame)
  }
  close(reason?: string): void {
    this.inner.close(reason)
  }
}

/** A session with valid credentials, taken over by the attacker once open. */
export interface ArmedSocket {
  /** Writes raw frames after the handshake; resolves when written (never rejects). */
  inject(frame: Uint8Array): Promise<void>
  readonly open: boolean
  readonly session: SyncSession
  /** What the server sent after the takeover (`framesWithWatched`: frames holding the `watchFor` text). */
  readonly received: { frames: number; bytes: number; framesWithWatched: number }
  readonly closed: Promise<void>
  close(): Promise<void>
}

/**
 * Connects to `address` (a WebSocket URL or a libp2p multiaddr) as `role`
 * with its valid credentials: a real session over an in-memory store, asking
 * for no name unless `wantsEverything`, does the handshake (whatever
 * version and proofs it takes); then the session is muted so that only the
 * attacker's raw frames follow. With `watchFor`, every frame the server
 * sends from the start is searched for that text (a name the attacker must
 * never learn).
 */
export async function openArmed(address: string, role: Role, options: { wantsEverything?: boolean; watchFor?: string } = {}): Promise<ArmedSocket> {
  const filter = options.wantsEverything ? undefined : { names: ['attacker/asks-for-nothing'] }
  const peer: Peer = await createPeer({ agentId: role })
  const host = new StoreSyncHost({ store: peer.store })
  let dialed: Dialed | undefined
  const close = async () => {
    dialed?.connection.close('attacker done')
    await dialed?.transport.stop()
    host.stop()
    await peer.close()
  }
  try {
    dialed = await dial(address)
    const tap = new Tap(dialed.connection, options.watchFor === undefined ? undefined : Buffer.from(options.watchFor, 'utf8'))
    let markClosed!: () => void
    const closed = new Promise<void>((done) => {
      markClosed = done
    })
    tap.events.on('close', () => markClosed())
    const session = attachSession(tap, host, { agentId: agentId(role), token: TOKENS[role], filter, channelBinding: dialed.channelBinding })
    await new Promise<void>((resolve, reject) => {
      session.events.once('open', () => resolve())
      session.events.once('close', ({ reason }) => reject(new Error(`${role}'s handshake failed: ${reason}`)))
    })
    tap.muted = true
    tap.received = { frames: 0, bytes: 0, framesWithWatched: tap.received.framesWithWatched }
    return {
      inject: (frame) => tap.send(frame).catch(() => {}),
      get open() {
        return tap.open
      },
      session,
      get received() {
        return tap.received
      },
      closed,
      close,
    }
  } catch (error) {
    await close()
    throw error
  }
}

/** How an attack loop went: rounds run, rounds that failed (a refused or reset connection), the last failure. */
export interface LoopReport {
  rounds: number
  failures: number
  lastError?: string
}

/**
 * Runs `step` over and over (awaiting each) until `stop()`; a long step
 * checks `live()` to end early. A step that throws (the server refused or
 * reset the connection: part of the attack's life) is counted and retried
 * after 10 ms. `stop` resolves once the last step ended.
 */
export function attackLoop(step: (live: () => boolean) => Promise<void>): { stop(): Promise<LoopReport> } {
  let running = true
  const report: LoopReport = { rounds: 0, failures: 0 }
  const live = () => running
  const done = (async () => {
    while (running) {
      try {
        report.rounds++
        await step(live)
      } catch (error) {
        report.failures++
        report.lastError = String((error as Error)?.message ?? error).slice(0, 200)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  return {
    async stop() {
      running = false
      await done
      return report
    },
  }
}

/** Stops every loop; their reports summed (the last failure of any). */
export async function stopAll(loops: ReadonlyArray<{ stop(): Promise<LoopReport> }>): Promise<LoopReport> {
  const reports = await Promise.all(loops.map((loop) => loop.stop()))
  const lastError = reports
    .map((r) => r.lastError)
    .filter(Boolean)
    .at(-1)
  return { rounds: reports.reduce((n, r) => n + r.rounds, 0), failures: reports.reduce((n, r) => n + r.failures, 0), ...(lastError ? { lastError } : {}) }
}

/**
 * The URL query a y-websocket client puts its credentials in
 * (`new WebsocketProvider(url, room, doc, { params })`): the agent id it
 * claims and its token. One place, so the suite follows the route's format.
 */
export function yCredentials(role: Role): Record<string, string> {
  return { peer: role, token: TOKENS[role] }
}

/** A bare y-websocket connection to `room` (credentials in the query, none if `role` is undefined). */
export function openYRaw(yjsUrl: string, room: string, role?: Role, options: { localAddress?: string } = {}): Promise<RawSocket> {
  const query = role ? `?${new URLSearchParams(yCredentials(role))}` : ''
  return openRaw(`${yjsUrl}/${encodeURIComponent(room)}${query}`, options)
}
