/** transports/browser-websocket/: the browser's WebSocket as a dial-only transport (`concord-crdt/browser` uses it). */
export { BrowserWebSocketTransport, type BrowserWebSocketTransportOptions } from './transport.ts'
export { BrowserWebSocketConnection, type BrowserWebSocketConnectionOptions } from './connection.ts'
export type { WebSocketLike, WebSocketLikeConstructor, WebSocketLikeEvents } from './websocket-like.ts'
