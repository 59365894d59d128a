/** peer/: `createPeer()`, the composition root of Concord. */
export { createPeer, Peer, FlushTimeoutError, PRESENCE_TABLE_LIMITS } from './peer.ts'
export type { PresenceInfo, PresenceUpdate, PresenceStats } from './peer.ts'
export type {
  ListenOptions,
  Libp2pListenOptions,
  ConnectOptions,
  ReconnectingEvent,
  FlushOptions,
  FlushProgress,
  PeerEvents,
  PeerStats,
  HttpRoute,
  ChangeOptions,
  PeerStatus,
  PeerSessionStatus,
} from './peer.ts'
export type { Libp2pListening } from './libp2p-link.ts'
export type { PeerLibp2pOptions, PeerGossipOptions } from './libp2p-options.ts'
export { gossipTopic, DEFAULT_GOSSIP_GROUP } from './libp2p-options.ts'
export type { GossipStats } from './gossip-fanout.ts'
export { encodeGossipMessage, decodeGossipMessage, GOSSIP_FORMAT, type GossipMessage } from './gossip-codec.ts'
export type { PeerOptions, AuthOptions, AccessFunction, CredentialCheck, SyncTuning } from './options.ts'
export { StoreSyncHost, type StoreSyncHostOptions } from './store-sync-host.ts'
export { YWebsocketBridge, type YjsRoom, type YWebsocketClient, type YWebsocketBridgeOptions, type YWebsocketBridgeStats } from './y-websocket-bridge.ts'
export type { YWebsocketOptions, YWebsocketStats } from './y-websocket-route.ts'
export { readCredentials } from './http-credentials.ts'
export { DEFAULT_AWARENESS_LIMITS, type AwarenessLimits } from './y-websocket-awareness.ts'
