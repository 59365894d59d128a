/**
 * transports/ (`concord-crdt/transports`): the transport interface, the reconnect
 * helper, the seeded simulated network (also `concord-crdt/transports/memory`) and
 * the WebSocket transport (also `concord-crdt/transports/websocket`). The libp2p
 * transport is `concord-crdt/transports/libp2p` (it loads libp2p; this entry does not).
 */
export type { Transport, Connection, ConnectionEvents, TransportEvents, AbortOptions } from './transport.ts'
export { ConnectionEmitter } from './connection-events.ts'
export { Reconnector, backoffDelay } from './reconnect.ts'
export type { BackoffOptions, ReconnectOptions, ReconnectEvents, Timers } from './reconnect.ts'
export * from './memory/index.ts'
export * from './websocket/index.ts'
