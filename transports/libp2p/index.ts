/**
 * The libp2p transport of Concord: public names.
 */
export { Libp2pTransport, createLibp2pTransport, DEFAULT_LISTEN_ADDRESSES } from './libp2p-transport.ts'
export type { Libp2pListenAddress, Libp2pTransportStats } from './libp2p-transport.ts'
export { CONCORD_PROTOCOL, DEFAULT_LIMITS } from './options.ts'
export type { Libp2pLimits, Libp2pTransportOptions, RedialOptions } from './options.ts'
export type { PubSubChannel, PubSubHandler, SubscribeOptions } from './pubsub.ts'
export { KEY_FILE_NAME, loadOrCreatePrivateKey, encodeKeyFile, decodeKeyFile } from './key-file.ts'
export { createAllowlist, createAllowlistGater } from './allowlist-gater.ts'
export type { PeerAllowlist } from './allowlist-gater.ts'
export { encodeFrame, FrameDecoder } from './frame-codec.ts'
