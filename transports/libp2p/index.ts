/**
 * transports/libp2p/ (`concord-crdt/transports/libp2p`): the libp2p transport of
 * Concord (TCP or WebSocket, Noise, Yamux). Importing it applies the Node 20
 * shim (node20-shim.ts; nothing on Node 22+). The frame codec, the
 * allowlist gater and the key file codec stay internal.
 */
import './node20-shim.ts'
export { Libp2pTransport, createLibp2pTransport, DEFAULT_LISTEN_ADDRESSES } from './libp2p-transport.ts'
export type { Libp2pListenAddress, Libp2pTransportStats } from './libp2p-transport.ts'
export { CONCORD_PROTOCOL, DEFAULT_LIMITS } from './options.ts'
export type { Libp2pLimits, Libp2pTransportOptions, RedialOptions } from './options.ts'
export type { PubSubChannel, PubSubHandler, SubscribeOptions } from './pubsub.ts'
export { KEY_FILE_NAME, loadOrCreatePrivateKey } from './key-file.ts'
