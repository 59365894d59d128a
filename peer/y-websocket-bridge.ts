/**
 * y-websocket compatibility: lets a stock y-websocket client
 * (`new WebsocketProvider('ws://host:port/yjs', room, doc)`) edit the Yjs
 * document `room` of a Concord peer.
 *
 * It speaks the y-websocket wire protocol (y-protocols' sync and awareness
 * messages) on raw `ws` sockets. A client is a peer like any other: the
 * route (peer/y-websocket-route.ts) checked its credentials and its access
 * to the room before handing its socket over, and tells the bridge whether
 * it may write. What the bridge does per client:
 *
 * - its sync step 1 is answered from the document once everything the
 *   answer holds is durable; its updates (sync step 2, update) go through
 *   the room's `admit` (the peer's admission: access, type, limits,
 *   validation, then apply and persist, logged with the client's own agent
 *   id) if it may write, and are dropped and counted if it may only read;
 * - it is sent the units the sync host announces ({@link YWebsocketBridge.publish}:
 *   the peer's own once durable, other writers' once applied and queued for
 *   writing), never the document's own `update` events (which fire before
 *   anything is logged); its next message is taken once its update is
 *   applied, not once it is durable;
 * - its awareness is relayed within bounds (peer/y-websocket-awareness.ts)
 *   and never persisted.
 *
 * A room is opened with its first client and released with its last. A
 * client that sends faster than its messages are handled is paused (TCP
 * backpressure). Malformed messages are counted and dropped; a client that
 * keeps sending them is disconnected. Nothing a client sends can throw out
 * of a listener.
 */
import type { WebSocket } from 'ws'
import { Encoder, decodeGuarded, type Decoder } from '../crdt/codec.ts'
import { TokenBucket } from '../sync/token-bucket.ts'
import { RoomAwareness, type AwarenessClient, type AwarenessLimits } from './y-websocket-awareness.ts'

const messageSync = 0
const messageAwareness = 1
const messageAuth = 2
const messageQueryAwareness = 3
const syncStep1 = 0
const syncStep2 = 1
const syncUpdate = 2

/** Messages of one client waiting to be handled before its socket is paused (backpressure). */
const MAX_QUEUED_MESSAGES = 64
/** Bytes of one client's messages waiting to be handled before its socket is paused. */
const MAX_QUEUED_BYTES = 32 * 1024 * 1024
/**
 * Sync step 1 requests a client may send per second (bursts of twice that):
 * each costs an encoding of what it lacks and a flush. A stock client sends
 * one per connection, and one per `resyncInterval` if it set one.
 */
const SYNC_REQUESTS_PER_SECOND = 4

/** A y-websocket client, as the route admitted it. */
export interface YWebsocketClient {
  /** The agent id its edits are logged with (its authenticated agent id, or one generated for the connection). */
  readonly remoteAgentId: string
  /** What it may do with the room (a client that may not read never reaches the bridge). */
  readonly access: 'read' | 'write'
}

/** What the bridge needs of one Yjs document. */
export interface YjsRoom {
  /** The document's state vector (our sync step 1). */
  stateVector(): Uint8Array
  /** What a client at `stateVector` lacks, as a Yjs update (throws `DecodeError` on a bad vector). */
  updateSince(stateVector: Uint8Array): Uint8Array
  /** Resolves once everything the document holds now is durable. */
  durable(): Promise<void>
  /**
   * Admits an update from a client that may write: `applied`, `refused` (by
   * the admission) or `invalid` (did not validate); rejects when it could
   * not be persisted. `applied` is called once the update is applied and
   * its write queued, before it is durable (not for a refused update).
   */
  admit(update: Uint8Array, client: YWebsocketClient, applied?: () => void): Promise<'applied' | 'refused' | 'invalid'>
  /** The room's last client left. */
  release(): void
}

/** Options of the bridge. */
export interface YWebsocketBridgeOptions {
  /** Opens the document of a room (`create`: the first client may write, so the name may be created); rejecting refuses the client. */
  readonly openRoom: (name: string, create: boolean) => Promise<YjsRoom>
  /** Malformed messages tolerated per client before it is disconnected (default 16). */
  readonly maxBadMessages?: number
  /** Largest message accepted from a client, in bytes (default 16 MiB). */
  readonly maxMessageBytes?: number
  /** Bounds of each room's awareness. */
  readonly awareness?: AwarenessLimits
  /** Clock for the awareness rate (default `Date.now`). */
  readonly now?: () => number
}

/** Counters of the bridge (in `peer.stats().yWebsocket`). */
export interface YWebsocketBridgeStats {
  /** Clients taken over (admitted by the route). */
  connections: number
  messagesReceived: number
  /** Client updates applied and persisted. */
  updatesApplied: number
  /** Client updates dropped: the client may only read. */
  updatesDropped: number
  /** Client updates refused by the admission (access withdrawn meanwhile, a type, a limit). */
  updatesRefused: number
  malformedDropped: number
  /** Awareness states dropped: over a bound, over the rate, someone else's. */
  awarenessDropped: number
  /** Sync step 1 requests dropped: over the rate (4 per second per client, bursts of 8). */
  requestsDropped: number
  clientsDisconnected: number
}

interface Member {
  readonly client: YWebsocketClient
  readonly awareness: AwarenessClient
  readonly requests: TokenBucket
}

interface RoomState {
  readonly room: YjsRoom
  readonly awareness: RoomAwareness
  readonly members: Map<WebSocket, Member>
}

/** A room, open or opening, and the clients on their way in (it is released once it has neither). */
interface RoomEntry {
  readonly ready: Promise<RoomState>
  joining: number
}

/** Serves y-websocket clients from Concord's Yjs documents. */
export class YWebsocketBridge {
  readonly stats: YWebsocketBridgeStats = {
    connections: 0,
    messagesReceived: 0,
    updatesApplied: 0,
    updatesDropped: 0,
    updatesRefused: 0,
    malformedDropped: 0,
    awarenessDropped: 0,
    requestsDropped: 0,
    clientsDisconnected: 0,
  }

  private readonly rooms = new Map<string, RoomEntry>()
  private readonly maxBadMessages: number
  private readonly maxMessageBytes: number
  private closed = false
  private readonly now: () => number

  constructor(private readonly options: YWebsocketBridgeOptions) {
    this.now = options.now ?? Date.now
    this.maxBadMessages = options.maxBadMessages ?? 16
    this.maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024
  }

  /** Takes over an accepted socket of `client` for `roomName`. */
  handle(socket: WebSocket, roomName: string, client: YWebsocketClient): void {
    this.stats.connections++
    socket.binaryType = 'nodebuffer'
    let badMessages = 0
    const pending: Uint8Array[] = []
    let joined: { state: RoomState; member: Member } | undefined
    let queue = Promise.resolve()
    let queuedMessages = 0
    let queuedBytes = 0
    let paused = false

    const malformed = (): void => {
      this.stats.malformedDropped++
      if (++badMessages === this.maxBadMessages + 1) {
        this.stats.clientsDisconnected++
        socket.close(1008, 'too many malformed messages')
      }
    }
    const enqueue = (bytes: Uint8Array): void => {
      const { state, member } = joined!
      queuedMessages++
      queuedBytes += bytes.length
      if (!paused && (queuedMessages > MAX_QUEUED_MESSAGES || queuedBytes > MAX_QUEUED_BYTES)) {
        paused = true
        socket.pause() // a client that sends faster than its updates are persisted waits (TCP backpressure)
      }
      // Messages of one client are handled in order; updates wait for their commit.
      queue = queue
        .then(() => this.onMessage(state, socket, member, bytes))
        .then(
          (ok) => {
            if (!ok) malformed()
          },
          () => malformed(),
        )
        .then(() => {
          queuedMessages--
          queuedBytes -= bytes.length
          if (paused && queuedMessages <= MAX_QUEUED_MESSAGES / 2 && queuedBytes <= MAX_QUEUED_BYTES / 2) {
            paused = false
            socket.resume()
          }
        })
    }

    socket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      this.stats.messagesReceived++
      const bytes = toBytes(data)
      if (!isBinary || bytes.length === 0 || bytes.length > this.maxMessageBytes) return malformed()
      if (!joined) {
        if (pending.length >= MAX_QUEUED_MESSAGES) return malformed()
        pending.push(bytes)
        return
      }
      enqueue(bytes)
    })
    socket.on('error', () => socket.terminate())
    socket.on('close', () => {
      if (joined) this.leave(roomName, joined.state, socket, joined.member)
    })

    const entry = this.join(roomName, client.access === 'write')
    entry.ready.then(
      (state) => {
        entry.joining--
        if (socket.readyState !== socket.OPEN || this.closed) {
          this.releaseIfEmpty(roomName, entry, state)
          return
        }
        const member: Member = {
          client,
          awareness: state.awareness.join(),
          requests: new TokenBucket(SYNC_REQUESTS_PER_SECOND, 2 * SYNC_REQUESTS_PER_SECOND, this.now()),
        }
        state.members.set(socket, member)
        joined = { state, member }
        this.greet(state, socket)
        for (const bytes of pending.splice(0)) enqueue(bytes)
      },
      () => {
        entry.joining--
        socket.close(1011, 'room unavailable')
      },
    )
  }

  /**
   * A unit of `roomName`'s document (a Yjs update) the sync host announced
   * (the peer's own once durable, a client's or a peer's once applied): sent
   * to the room's clients, but the one it came from (`origin`).
   */
  publish(roomName: string, update: Uint8Array, origin?: unknown): void {
    const entry = this.rooms.get(roomName)
    if (!entry) return
    const message = syncMessage(syncUpdate, update)
    void entry.ready.then(
      (state) => {
        for (const [socket, member] of state.members) if (member.client !== origin) send(socket, message)
      },
      () => undefined,
    )
  }

  /** Rooms open (with clients, or one joining). */
  get openRooms(): number {
    return this.rooms.size
  }

  /** Whether a room is open (it has clients, or one is joining). */
  hasRoom(roomName: string): boolean {
    return this.rooms.has(roomName)
  }

  /** Disconnects every client and releases every room. */
  close(): void {
    this.closed = true
    for (const entry of this.rooms.values()) {
      entry.ready.then(
        (state) => {
          for (const socket of state.members.keys()) socket.close(1001, 'server closing')
          this.closeRoom(state)
        },
        () => {},
      )
    }
    this.rooms.clear()
  }

  /** The room `name`, opened by its first client; the caller is counted as joining until it is a member. */
  private join(name: string, create: boolean): RoomEntry {
    let entry = this.rooms.get(name)
    if (!entry) {
      const ready = this.options.openRoom(name, create).then((room) => {
        const state: RoomState = {
          room,
          members: new Map(),
          awareness: new RoomAwareness(
            this.options.awareness ?? {},
            (update) => {
              const message = awarenessMessage(update)
              for (const socket of state.members.keys()) send(socket, message)
            },
            this.options.now,
          ),
        }
        return state
      })
      const created: RoomEntry = { ready, joining: 0 }
      ready.catch(() => {
        if (this.rooms.get(name) === created) this.rooms.delete(name)
      })
      this.rooms.set(name, created)
      entry = created
    }
    entry.joining++
    return entry
  }

  private greet(state: RoomState, socket: WebSocket): void {
    send(socket, syncMessage(syncStep1, state.room.stateVector()))
    const all = state.awareness.encodeAll()
    if (all) send(socket, awarenessMessage(all))
  }

  /** Handles one message; resolves false when it was malformed. */
  private async onMessage(state: RoomState, socket: WebSocket, member: Member, bytes: Uint8Array): Promise<boolean> {
    const message = decodeGuarded('y-websocket message', bytes, readClientMessage)
    switch (message.type) {
      case 'step1': {
        if (!member.requests.tryTake(1, this.now())) {
          this.stats.requestsDropped++
          return true
        }
        const answer = syncMessage(syncStep2, state.room.updateSince(message.payload))
        // Only what is durable leaves this peer: the answer waits for everything it holds to be logged.
        await state.room.durable()
        send(socket, answer)
        return true
      }
      case 'update': {
        if (member.client.access !== 'write') {
          if (!isEmptyUpdate(message.payload)) this.stats.updatesDropped++
          return true
        }
        // The client's next message is taken once this update is applied (its write queued) or settled.
        let onApplied!: () => void
        const applied = new Promise<'queued'>((resolve) => {
          onApplied = () => resolve('queued')
        })
        const settled = state.room.admit(message.payload, member.client, onApplied).then(
          (result) => {
            if (result === 'invalid') return false
            if (result === 'applied') this.stats.updatesApplied++
            else this.stats.updatesRefused++
            return true
          },
          () => {
            // Not persisted (a storage failure): the client resends it on its next connection (sync step 2).
            socket.close(1011, 'could not persist the update')
            return true
          },
        )
        const first = await Promise.race([applied, settled])
        return first === 'queued' ? true : first
      }
      case 'awareness':
        this.stats.awarenessDropped += state.awareness.apply(message.payload, member.awareness)
        return true
      case 'query-awareness':
        send(socket, awarenessMessage(state.awareness.encodeAll() ?? new Uint8Array([0])))
        return true
      case 'auth':
        return true
    }
  }

  private leave(name: string, state: RoomState, socket: WebSocket, member: Member): void {
    if (!state.members.delete(socket)) return
    state.awareness.leave(member.awareness)
    const entry = this.rooms.get(name)
    if (entry) this.releaseIfEmpty(name, entry, state)
  }

  private releaseIfEmpty(name: string, entry: RoomEntry, state: RoomState): void {
    if (state.members.size > 0 || entry.joining > 0 || this.rooms.get(name) !== entry) return
    this.rooms.delete(name)
    this.closeRoom(state)
  }

  private closeRoom(state: RoomState): void {
    state.awareness.destroy()
    state.room.release()
  }
}

type ClientMessage = { readonly type: 'step1' | 'update' | 'awareness'; readonly payload: Uint8Array } | { readonly type: 'query-awareness' | 'auth' }

/** Reads one client message (bounds-checked; trailing bytes are an error). Exported for the decoder fuzzer. @internal */
export function readClientMessage(decoder: Decoder): ClientMessage {
  const type = decoder.readVarUint()
  if (type === messageSync) {
    const step = decoder.readVarUint()
    const payload = decoder.readBytes()
    if (step === syncStep1) return { type: 'step1', payload }
    if (step === syncStep2 || step === syncUpdate) return { type: 'update', payload }
    throw new RangeError(`unknown sync message ${step}`)
  }
  if (type === messageAwareness) return { type: 'awareness', payload: decoder.readBytes() }
  if (type === messageQueryAwareness) return { type: 'query-awareness' }
  if (type === messageAuth) {
    decoder.readRaw(decoder.remaining)
    return { type: 'auth' }
  }
  throw new RangeError(`unknown message type ${type}`)
}

function syncMessage(step: number, payload: Uint8Array): Uint8Array {
  return new Encoder().writeVarUint(messageSync).writeVarUint(step).writeBytes(payload).finish()
}

function awarenessMessage(update: Uint8Array): Uint8Array {
  return new Encoder().writeVarUint(messageAwareness).writeBytes(update).finish()
}

/** A Yjs v1 update with no struct and an empty delete set (what an empty document answers). */
function isEmptyUpdate(update: Uint8Array): boolean {
  return update.length === 2 && update[0] === 0 && update[1] === 0
}

function send(socket: WebSocket, message: Uint8Array): void {
  if (socket.readyState !== socket.OPEN) return
  socket.send(message, (error) => {
    if (error) socket.terminate()
  })
}

function toBytes(data: Buffer | ArrayBuffer | Buffer[]): Uint8Array {
  if (Array.isArray(data)) return new Uint8Array(Buffer.concat(data))
  if (data instanceof ArrayBuffer) return new Uint8Array(data)
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}
