/**
 * Construction of the libp2p node of the transport: TCP and WebSocket
 * transports, Noise, Yamux, Identify, the connection gater, limits, and the
 * optional bootstrap, mDNS and gossipsub, per {@link Libp2pTransportOptions}.
 */
import './node20-shim.ts'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { bootstrap } from '@libp2p/bootstrap'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Libp2p, PrivateKey } from '@libp2p/interface'
import { mdns } from '@libp2p/mdns'
import { tcp } from '@libp2p/tcp'
import { webSockets } from '@libp2p/websockets'
import { createLibp2p, type Libp2pOptions } from 'libp2p'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { InboundAddressLimit } from './address-limit.ts'
import { createAllowlistGater, type PeerAllowlist } from './allowlist-gater.ts'
import { loadOrCreatePrivateKey } from './key-file.ts'
import type { Libp2pLimits, Libp2pTransportOptions } from './options.ts'

/** The services of the node: identify, and gossipsub when on. */
export type Services = { identify: unknown; pubsub?: GossipSub }

/** The node's key: `options.privateKey`, else the key file in `options.dir`, else a fresh Ed25519 key. */
export async function resolvePrivateKey(options: Libp2pTransportOptions): Promise<PrivateKey> {
  if (options.privateKey) return options.privateKey
  if (options.dir !== undefined) return loadOrCreatePrivateKey(options.dir)
  return generateKeyPair('Ed25519')
}

/** What {@link createNode} builds a node from. */
export interface NodeSpec {
  readonly options: Libp2pTransportOptions
  readonly limits: Libp2pLimits
  readonly privateKey: PrivateKey
  /** Addresses to listen on. */
  readonly addresses: readonly string[]
  /** Peers the gater admits. */
  readonly allow: PeerAllowlist
  /** Called for every peer the gater refuses. */
  readonly onDenied: () => void
  /** The per-address cap on inbound connections (applied by the gater). */
  readonly addressLimit: InboundAddressLimit
}

/**
 * Creates the libp2p node (not started).
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT` when libp2p refuses the configuration.
 */
export async function createNode(spec: NodeSpec): Promise<Libp2p<Services>> {
  const { options, limits } = spec
  const peerDiscovery: Array<NonNullable<Libp2pOptions['peerDiscovery']>[number]> = []
  if (options.bootstrap && options.bootstrap.length > 0) {
    peerDiscovery.push(bootstrap({ list: [...options.bootstrap], timeout: 10 }) as never)
  }
  if (options.mdns) {
    const init = typeof options.mdns === 'object' ? options.mdns : {}
    peerDiscovery.push(mdns({ interval: init.intervalMs ?? 10_000, serviceTag: init.serviceTag ?? 'concord.local' }) as never)
  }
  const services: Record<string, unknown> = {
    identify: identify({ timeout: limits.dialTimeoutMs }),
  }
  if (options.gossipsub) {
    const init = typeof options.gossipsub === 'object' ? options.gossipsub : {}
    services.pubsub = gossipsub({
      allowPublishToZeroTopicPeers: true,
      emitSelf: false,
      globalSignaturePolicy: 'StrictSign',
      heartbeatInterval: init.heartbeatIntervalMs ?? 1_000,
      floodPublish: init.floodPublish ?? true,
      // Gossipsub scores down peers that share an IP (a Sybil defence for
      // public networks); Concord agents often share one machine or one
      // NAT, and 16 agents on 127.0.0.1 got graylisted. Admission is the
      // allowlist's job, so the colocation penalty is off.
      scoreParams: { IPColocationFactorWeight: 0 },
      maxInboundDataLength: limits.maxPubsubMessageBytes,
      maxInboundStreams: 2,
      maxOutboundStreams: 2,
    })
  }
  const config: Libp2pOptions<Services> = {
    privateKey: spec.privateKey,
    start: false,
    addresses: { listen: [...spec.addresses] },
    transports: [tcp(), webSockets()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux({ maxInboundStreams: limits.maxMuxedStreams, maxOutboundStreams: limits.maxMuxedStreams })],
    peerDiscovery,
    services: services as never,
    connectionManager: {
      maxConnections: limits.maxConnections,
      maxParallelDials: limits.maxParallelDials,
      dialTimeout: limits.dialTimeoutMs,
      inboundConnectionThreshold: limits.inboundConnectionThreshold,
      maxIncomingPendingConnections: limits.maxIncomingPendingConnections,
      inboundUpgradeTimeout: limits.inboundUpgradeTimeoutMs,
    },
    connectionGater: {
      ...createAllowlistGater(spec.allow, spec.onDenied),
      denyInboundConnection: (connection) => spec.addressLimit.deny(connection),
    },
  }
  try {
    return await createLibp2p<Services>(config)
  } catch (error) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot create the libp2p node: ${(error as Error).message}`, { cause: error })
  }
}
