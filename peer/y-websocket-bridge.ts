/**
 * y-websocket compatibility: lets a stock y-websocket client
 * (`new WebsocketProvider('ws://host:port/yjs', room, doc)`) edit the Yjs
 * document `room` of a Concord peer.
 *
 * It speaks the y-websocket wire protocol (y-protocols' sync and awareness
 * messages) on raw `ws` sockets, but never lets a client's bytes reach the
 * document directly: every update goes through the room's `applyUpdate`,
 * which validates it (the document replica's guard), persists it (log first)
 * and applies it, so the change is durable and synced onward to Concord peers
 * like any other remote change. Updates of the document from anywhere else
 * (local edits, Concord peers) are broadcast to the room's clients; awareness
 * is relayed between the clients of a room and never persisted.
 *
 * Malformed messages are counted and dropped; a client that keeps sending
 * them is disconnected. Nothing a client sends can throw out of a listener.
 */
import type { WebSocket } from 'ws'
import type * as Y from 'yjs'
import * as encoding from 'lib0/encoding'
import * as decoding from 'lib0/decoding'
import * as syncProtocol from 'y-protocols/sync'
import * as awarenessProtocol from 'y-protocols/awareness'

const messageSync = 0
const messageAwareness = 1
const messageAuth = 2
const messageQueryAwareness = 3

/** What the bridge needs of one Yjs document. */
export interface YjsRoom {
  /** The live document (read to answer sync step 1; never written by the bridge). */
  readonly doc: Y.Doc
  /** Validates, persists and applies an update from a client; rejects on bad input. */
  applyUpdate(update: Uint8Array, origin: unknown): Promise<void>
  /** Calls `listener` for every update of the document, with the origin passed to `applyUpdate` when it came from there. */
  onUpdate(listener: (update: Uint8Array, origin: unknown) => void): () => void
}

/** Options of the bridge. */
export interface YWebsocketBridgeOptions {
  /** Opens (or creates) the document of a room; rejecting refuses the client. */
  readonly openRoom: (name: string) => Promise<YjsRoom>
  /** Malformed messages tolerated per client before it is disconnected (default 16). */
  readonly maxBadMessages?: number
  /** Largest message accepted from a client, in bytes (default 16 MiB). */
  readonly maxMessageBytes?: number
}

/** Counters of the bridge, for observability and tests. */
export interface YWebsocketBridgeStats {
  connections: number
  messagesReceived: number
  updatesApplied: number
  malformedDropped: number
  clientsDisconnected: number
}

interface RoomState {
  readonly name: string
  readonly room: YjsRoom
  readonly awareness: awarenessProtocol.Awareness
  readonly clients: Map<WebSocket, Set<number>>
  readonly unsubscribe: () => void
}

/** Serves y-websocket clients from Concord's Yjs documents. */
export class YWebsocketBridge {
  readonly stats: YWebsocketBridgeStats = {
    connections: 0, messagesReceived: 0, updatesApplied: 0, malformedDropped: 0, clientsDisconnected: 0,
  }

  private readonly rooms = new Map<string, Promise<RoomState>>()
  private readonly maxBadMessages: number
  private readonly maxMessageBytes: number

  constructor(private readonly options: YWebsocketBridgeOptions) {
    this.maxBadMessages = options.maxBadMessages ?? 16
    this.maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024
  }

  /** Takes over an accepted socket for `roomName`. */
  handle(socket: WebSocket, roomName: string): void {
    this.stats.connections++
    socket.binaryType = 'nodebuffer'
    let badMessages = 0
    const pending: Uint8Array[] = []
    let state: RoomState | undefined
    let queue = Promise.resolve()

    const malformed = (): void => {
      this.stats.malformedDropped++
      if (++badMessages === this.maxBadMessages + 1) {
        this.stats.clientsDisconnected++
        socket.close(1008, 'too many malformed messages')
      }
    }

    const onMessage = (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void => {
      this.stats.messagesReceived++
      const bytes = toBytes(data)
      if (!isBinary || bytes.length === 0 || bytes.length > this.maxMessageBytes) return malformed()
      if (!state) { pending.push(bytes); return }
      const room = state
      // Messages of one client are handled in order; updates wait for their commit.
      queue = queue.then(() => this.onMessage(room, socket, bytes)).then((ok) => { if (!ok) malformed() }, () => malformed())
    }
    socket.on('message', onMessage)
    socket.on('error', () => socket.terminate())
    socket.on('close', () => { if (state) this.leave(state, socket) })

    this.room(roomName).then((room) => {
      if (socket.readyState !== socket.OPEN) return
      state = room
      room.clients.set(socket, new Set())
      this.greet(room, socket)
      for (const bytes of pending.splice(0)) {
        queue = queue.then(() => this.onMessage(room, socket, bytes)).then((ok) => { if (!ok) malformed() }, () => malformed())
      }
    }, () => socket.close(1011, 'room unavailable'))
  }

  /** Disconnects every client and forgets every room. */
  close(): void {
    for (const promise of this.rooms.values()) {
      promise.then((room) => {
        for (const socket of room.clients.keys()) socket.close(1001, 'server closing')
        room.unsubscribe()
        room.awareness.destroy()
      }, () => {})
    }
    this.rooms.clear()
  }

  private room(name: string): Promise<RoomState> {
    let promise = this.rooms.get(name)
    if (!promise) {
      promise = this.options.openRoom(name).then((room) => {
        const awareness = new awarenessProtocol.Awareness(room.doc)
        awareness.setLocalState(null)
        const state: RoomState = {
          name, room, awareness, clients: new Map(),
          unsubscribe: room.onUpdate((update, origin) => {
            const message = encodeMessage(messageSync, (encoder) => syncProtocol.writeUpdate(encoder, update))
            for (const client of state.clients.keys()) if (client !== origin) send(client, message)
          }),
        }
        awareness.on('update', ({ added, updated, removed }: AwarenessChange, origin: unknown) => {
          const changed = [...added, ...updated, ...removed]
          const controlled = state.clients.get(origin as WebSocket)
          if (controlled) {
            for (const id of added) controlled.add(id)
            for (const id of removed) controlled.delete(id)
          }
          const message = encodeMessage(messageAwareness, (encoder) =>
            encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(awareness, changed)))
          for (const client of state.clients.keys()) send(client, message)
        })
        return state
      })
      promise.catch(() => this.rooms.delete(name))
      this.rooms.set(name, promise)
    }
    return promise
  }

  private greet(room: RoomState, socket: WebSocket): void {
    send(socket, encodeMessage(messageSync, (encoder) => syncProtocol.writeSyncStep1(encoder, room.room.doc)))
    const states = room.awareness.getStates()
    if (states.size > 0) {
      send(socket, encodeMessage(messageAwareness, (encoder) =>
        encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(room.awareness, [...states.keys()]))))
    }
  }

  /** Handles one message; resolves false when it was malformed. */
  private async onMessage(room: RoomState, socket: WebSocket, bytes: Uint8Array): Promise<boolean> {
    const decoder = decoding.createDecoder(bytes)
    const type = decoding.readVarUint(decoder)
    switch (type) {
      case messageSync: {
        const syncType = decoding.readVarUint(decoder)
        const payload = decoding.readVarUint8Array(decoder)
        if (syncType === syncProtocol.messageYjsSyncStep1) {
          send(socket, encodeMessage(messageSync, (encoder) => syncProtocol.writeSyncStep2(encoder, room.room.doc, payload)))
          return true
        }
        if (syncType === syncProtocol.messageYjsSyncStep2 || syncType === syncProtocol.messageYjsUpdate) {
          await room.room.applyUpdate(payload, socket)
          this.stats.updatesApplied++
          return true
        }
        return false
      }
      case messageAwareness:
        awarenessProtocol.applyAwarenessUpdate(room.awareness, decoding.readVarUint8Array(decoder), socket)
        return true
      case messageQueryAwareness:
        send(socket, encodeMessage(messageAwareness, (encoder) => encoding.writeVarUint8Array(encoder,
          awarenessProtocol.encodeAwarenessUpdate(room.awareness, [...room.awareness.getStates().keys()]))))
        return true
      case messageAuth:
        return true
      default:
        return false
    }
  }

  private leave(room: RoomState, socket: WebSocket): void {
    const controlled = room.clients.get(socket)
    room.clients.delete(socket)
    if (controlled && controlled.size > 0) awarenessProtocol.removeAwarenessStates(room.awareness, [...controlled], null)
  }
}

interface AwarenessChange {
  added: number[]
  updated: number[]
  removed: number[]
}

function encodeMessage(type: number, write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, type)
  write(encoder)
  return encoding.toUint8Array(encoder)
}

function send(socket: WebSocket, message: Uint8Array): void {
  if (socket.readyState !== socket.OPEN) return
  socket.send(message, (error) => { if (error) socket.terminate() })
}

function toBytes(data: Buffer | ArrayBuffer | Buffer[]): Uint8Array {
  if (Array.isArray(data)) return new Uint8Array(Buffer.concat(data))
  if (data instanceof ArrayBuffer) return new Uint8Array(data)
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}
