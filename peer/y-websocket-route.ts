/**
 * The y-websocket route of a peer's WebSocket listener, `/yjs/<room>`: a
 * stock y-websocket client is a peer like any other, admitted by the peer's
 * admission (sync/admission.ts) before its socket reaches the bridge.
 *
 * At the HTTP upgrade, before any room is opened or any name looked up:
 *
 * 1. Credentials. The token comes from an `Authorization: Bearer <token>`
 *    header (a Node client: a `WebSocketPolyfill` that sets headers) or the
 *    `token` query parameter (what a browser can send: y-websocket's
 *    `params` option); the agent id from an `X-Concord-Peer` header or the
 *    `peer` query parameter. Without a agent id the connection gets a
 *    generated one (`yws-` and 12 hex digits), its agent id in the log. The
 *    peer's credential check (`auth.accept`) decides on the token as a
 *    bearer credential (a stock client cannot answer the Concord
 *    handshake's challenge: serve this route over `wss://`); refused: `401`.
 * 2. Access, with the room as the name: `none`, or a room that does not
 *    exist for a client that may only read, is refused with the listener's
 *    own `404` for a path it does not serve (the client learns nothing).
 * 3. Type: a room whose name holds another type is refused `409`.
 *
 * Then the bridge serves the client: read-only clients get the document and
 * their updates are dropped (counted); writers' updates are admitted
 * (access again, type, limits, validation, then apply and persist with the
 * client's agent id). Clients are sent the peer's own changes once durable
 * and other clients' and peers' once applied (their senders keep them until
 * they are durable here): the route feeds
 * the bridge from the sync host's commits (the store's `committed` units),
 * as the Concord sessions are fed.
 */
import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import { ErrorCodes } from '../crdt/errors.ts'
import type { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import type { Store } from '../persistence/store.ts'
import type { Admission, AgentId, PresentedCredentials, SyncHost } from '../sync/index.ts'
import { readCredentials } from './http-credentials.ts'
import { YWebsocketBridge, type YWebsocketBridgeStats, type YWebsocketClient, type YjsRoom } from './y-websocket-bridge.ts'
import type { AwarenessLimits } from './y-websocket-awareness.ts'

/** Tuning of the y-websocket route (`listen({ yWebsocket: { ... } })`). */
export interface YWebsocketOptions {
  /** Bounds of each room's awareness (states per room and per client, bytes per state, messages per second). */
  readonly awareness?: AwarenessLimits | undefined
  /** Largest message accepted from a client, bytes (default 16 MiB). */
  readonly maxMessageBytes?: number | undefined
}

/** Counters of the y-websocket route (`peer.stats().yWebsocket`). */
export interface YWebsocketStats extends YWebsocketBridgeStats {
  /** Rooms open now (a room is released with its last client). */
  rooms: number
  /** Upgrades refused: credentials (401), a room not readable or absent (404), a room of another type (409). */
  refusedCredentials: number
  refusedNotFound: number
  refusedType: number
}

/** What the route needs of its peer. */
export interface YWebsocketRouteOptions extends YWebsocketOptions {
  /** The serving peer's agent id (a client may not claim it). */
  readonly agentId: string
  readonly store: Store
  /** The peer's sync host: the commits it announces are sent to the rooms' clients. */
  readonly host: Pick<SyncHost, 'subscribe'>
  readonly admission: Admission
  /** Answers an upgrade exactly as the listener does for a path it does not serve. */
  readonly notFound: (socket: Duplex) => void
}

const EMPTY_UPDATE = new Uint8Array([0, 0])
const UNAUTHORIZED = 'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="concord"\r\nConnection: close\r\n\r\n'
const CONFLICT = 'HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\n'

/** A y-websocket client admitted by the route: the origin of its commits (the store logs `remoteAgentId` as their agent). */
class YWebsocketPeer implements YWebsocketClient {
  constructor(
    readonly remoteAgentId: string,
    readonly access: 'read' | 'write',
  ) {}
}

/** See the module comment. */
export class YWebsocketRoute {
  private readonly bridge: YWebsocketBridge
  private readonly wss: WebSocketServer
  private readonly counts = { refusedCredentials: 0, refusedNotFound: 0, refusedType: 0 }
  private readonly offCommits: () => void
  private closed = false

  constructor(private readonly options: YWebsocketRouteOptions) {
    const maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024
    this.wss = new WebSocketServer({ noServer: true, maxPayload: maxMessageBytes, clientTracking: false })
    this.wss.on('error', () => undefined)
    this.bridge = new YWebsocketBridge({ openRoom: (name, create) => this.openRoom(name, create), maxMessageBytes, awareness: options.awareness })
    this.offCommits = options.host.subscribe(({ entries, origin }) => {
      for (const entry of entries) {
        if (entry.replicaType === 'yjs' && this.bridge.hasRoom(entry.name)) this.bridge.publish(entry.name, entry.delta, origin)
      }
    })
  }

  /** Counters of the route and its bridge. */
  get stats(): YWebsocketStats {
    return { ...this.bridge.stats, ...this.counts, rooms: this.bridge.openRooms }
  }

  /** Handles an HTTP upgrade under `/yjs` (the transport's route handler). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    void this.admit(request, socket, head).catch(() => socket.destroy())
  }

  /** Disconnects every client and stops feeding rooms. */
  close(): void {
    this.closed = true
    this.offCommits()
    this.bridge.close()
    this.wss.close()
  }

  private async admit(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const { admission } = this.options
    const url = new URL(request.url ?? '/', 'http://localhost')
    // 1. credentials, before anything about the room is read
    const claim = readCredentials(request, url)
    const peer = claim?.peer ?? generatedId()
    // A bearer token (a stock client cannot answer the handshake's challenge), or nothing.
    const presented: PresentedCredentials = claim?.token ? { scheme: 'bearer', token: claim.token } : { scheme: 'none' }
    if (!claim || peer === this.options.agentId || !(await admission.authenticate(peer as AgentId, presented))) {
      this.counts.refusedCredentials++
      return refuse(socket, UNAUTHORIZED)
    }
    // 2. access with the room as the name, 3. its type
    const room = roomName(url.pathname)
    const opened = room === undefined ? undefined : await admission.openName(peer as AgentId, room, 'yjs')
    if (room === undefined || opened === undefined || 'refused' in opened) {
      const typeMismatch = opened !== undefined && 'refused' in opened && opened.refused.code === ErrorCodes.TYPE_MISMATCH
      if (typeMismatch) {
        this.counts.refusedType++
        return refuse(socket, CONFLICT)
      }
      this.counts.refusedNotFound++
      return this.options.notFound(socket)
    }
    if (this.closed || socket.destroyed) return void socket.destroy()
    const client = new YWebsocketPeer(peer, opened.access)
    this.wss.handleUpgrade(request, socket, head, (ws) => this.bridge.handle(ws, room, client))
  }

  private async openRoom(name: string, create: boolean): Promise<YjsRoom> {
    const { store, admission } = this.options
    let replica: YjsReplica | undefined = (await store.open(name, 'yjs', create ? {} : { mustExist: true })) as YjsReplica
    const held = (): YjsReplica => {
      if (!replica) throw new Error(`room "${name}" was released`)
      return replica
    }
    return {
      stateVector: () => held().version(),
      updateSince: (stateVector) => held().deltaSince(stateVector) ?? EMPTY_UPDATE,
      durable: () => store.flush(),
      admit: async (update, client, applied) => {
        const admitted = await admission.admit(client.remoteAgentId as AgentId, [{ name, replicaType: 'yjs', delta: update }], client, applied)
        if (!('refused' in admitted)) return 'applied'
        const code = admitted.refused.code
        return code === ErrorCodes.DECODE_ERROR || code === ErrorCodes.INVALID_ARGUMENT ? 'invalid' : 'refused'
      },
      // The store's cache decides from here whether the document stays in memory.
      release: () => {
        replica = undefined
      },
    }
  }
}

/** The room of a `/yjs/<room>` path, or undefined. */
function roomName(pathname: string): string | undefined {
  if (!pathname.startsWith('/yjs/')) return undefined
  try {
    const room = decodeURIComponent(pathname.slice('/yjs/'.length))
    return room.length > 0 ? room : undefined
  } catch {
    return undefined
  }
}

/** A per-connection agent id for a client that named none. */
function generatedId(): string {
  return `yws-${randomBytes(6).toString('hex')}`
}

function refuse(socket: Duplex, response: string): void {
  if (socket.destroyed) return
  socket.end(response)
  socket.once('finish', () => socket.destroy())
}
