/** peer/: `createPeer()`, the composition root of Concord. */
export { createPeer, Peer } from './peer.ts'
export type { ListenOptions, ConnectOptions, FlushOptions, PeerEvents, PeerStats } from './peer.ts'
export type { PeerOptions, AuthOptions, AccessFunction, CredentialCheck, SyncTuning } from './options.ts'
export { StoreSyncHost, type StoreSyncHostOptions } from './store-sync-host.ts'
export { YWebsocketBridge, type YjsRoom, type YWebsocketBridgeOptions, type YWebsocketBridgeStats } from './y-websocket-bridge.ts'
