/**
 * The transport interface: every transport (memory, WebSocket, libp2p) moves
 * opaque frames between two endpoints and knows nothing of CRDTs, documents
 * or the Concord protocol. Peer identity, versions and authentication are
 * settled by the sync handshake on top of a {@link Connection}.
 *
 * Contract, for every implementation (checked by the transport conformance
 * suite):
 * - frames arrive whole, in order, at most once per `send` on one connection;
 * - `send` resolves when the transport accepted the frame (backpressure:
 *   a caller that awaits `send` never queues without bound) and rejects with
 *   a `ConcordError` (`CONCORD_CLOSED`) once the connection is closed;
 * - `close` is idempotent; both ends see exactly one `close` event;
 * - errors from the underlying socket never escape as exceptions: they end
 *   the connection with a `close` event carrying the reason.
 */
import type { Emitter } from '../crdt/emitter.ts'

/** Events of one connection. */
export interface ConnectionEvents extends Record<string, unknown> {
  /** One whole frame from the remote end. */
  message: Uint8Array
  /** The connection ended (locally or remotely); emitted exactly once. */
  close: { readonly reason?: string }
}

/** A bidirectional, ordered, framed byte channel to one remote endpoint. */
export interface Connection {
  /** Unique id of this connection (for logs and counters). */
  readonly id: string
  /** Who opened it. */
  readonly direction: 'inbound' | 'outbound'
  /** Transport-specific remote address, for logs (`ws://...`, a multiaddr, a simulated node name). */
  readonly remoteAddress: string
  /** Transport-level facts about the remote end known before any frame (for example a libp2p PeerId). */
  readonly remoteIdentity?: string
  /** True until closed. */
  readonly open: boolean
  readonly events: Emitter<ConnectionEvents>
  /** Sends one frame; resolves when accepted (backpressure), rejects when closed. */
  send(frame: Uint8Array): Promise<void>
  /** Closes the connection; idempotent. */
  close(reason?: string): void
}

/** Events of a transport. */
export interface TransportEvents extends Record<string, unknown> {
  /** A new inbound connection was accepted by a listener. */
  connection: Connection
}

/** Options common to async transport operations. */
export interface AbortOptions {
  readonly signal?: AbortSignal | undefined
}

/** A way to open connections (`dial`) and, optionally, accept them (`listen`). */
export interface Transport {
  /** Short name for logs: `memory`, `websocket`, `libp2p`. */
  readonly name: string
  readonly events: Emitter<TransportEvents>
  /** Starts accepting connections at `address` (transport-specific); resolves with the bound address. */
  listen?(address: unknown, options?: AbortOptions): Promise<string>
  /** Opens a connection to `address`. */
  dial(address: string, options?: AbortOptions): Promise<Connection>
  /** Closes listeners and every connection. */
  stop(): Promise<void>
}
