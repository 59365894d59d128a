/** transports/websocket/: the WebSocket transport (ws server and client). */
export { WebSocketTransport } from './transport.ts'
export type { WebSocketTransportOptions, WebSocketListenOptions, WebSocketDialOptions, WebSocketDialTls, UpgradeHandler, RequestHandler } from './transport.ts'
export { WebSocketConnection } from './connection.ts'
export type { WebSocketConnectionOptions } from './connection.ts'
export { parseWebSocketUrl, CONCORD_PATH_HEADER } from './dial-errors.ts'
