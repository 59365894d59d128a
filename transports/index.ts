/** transports/: the transport interface, its implementations and the reconnect helper. */
export type { Transport, Connection, ConnectionEvents, TransportEvents, AbortOptions } from './transport.ts'
export { Reconnector, backoffDelay } from './reconnect.ts'
export type { BackoffOptions, ReconnectOptions, ReconnectEvents, Timers } from './reconnect.ts'
export * from './memory/index.ts'
export * from './websocket/index.ts'
