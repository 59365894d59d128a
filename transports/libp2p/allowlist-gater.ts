/**
 * A libp2p connection gater that admits only the PeerIds on an allowlist.
 *
 * Noise proves who the remote peer is; it does not say whether that peer may
 * talk to us. The gater decides, as early as libp2p allows:
 * - outbound: `denyDialPeer` refuses to dial a PeerId not on the list before
 *   any socket opens; a dial of an address without a PeerId is refused right
 *   after the Noise handshake (`denyOutboundEncryptedConnection`);
 * - inbound: `denyInboundEncryptedConnection` closes the connection right after
 *   the Noise handshake, before the multiplexer is negotiated, so the refused
 *   peer never opens a stream;
 * - the upgraded-connection hooks repeat the check (defence in depth).
 * Without an allowlist every peer that completes Noise is admitted.
 */
import type { ConnectionGater, PeerId } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** A PeerId allowlist: `has` answers for the string form of a PeerId. */
export interface PeerAllowlist {
  /** True when `peerId` (base58btc string) is admitted. */
  has(peerId: string): boolean
}

/**
 * Validates and normalises a list of PeerId strings into a set.
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT` for a string that is not a PeerId.
 */
export function createAllowlist(peerIds: Iterable<string>): Set<string> {
  const allowed = new Set<string>()
  for (const text of peerIds) {
    try {
      allowed.add(peerIdFromString(text).toString())
    } catch (error) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${text}" is not a libp2p PeerId`, { cause: error })
    }
  }
  return allowed
}

/**
 * Builds the gater for `allowlist`; `onDenied` is
 * told about every refused peer (for counters and logs).
 */
export function createAllowlistGater(allowlist: PeerAllowlist, onDenied?: (peerId: string, stage: string) => void): ConnectionGater {
  const deny = (peerId: PeerId, stage: string): boolean => {
    const id = peerId.toString()
    if (allowlist.has(id)) return false
    onDenied?.(id, stage)
    return true
  }
  return {
    denyDialPeer: (peerId) => deny(peerId, 'dial'),
    denyOutboundEncryptedConnection: (peerId) => deny(peerId, 'outbound-encrypted'),
    denyInboundEncryptedConnection: (peerId) => deny(peerId, 'inbound-encrypted'),
    denyOutboundUpgradedConnection: (peerId) => deny(peerId, 'outbound-upgraded'),
    denyInboundUpgradedConnection: (peerId) => deny(peerId, 'inbound-upgraded'),
    denyInboundRelayedConnection: (_relay, remotePeer) => deny(remotePeer, 'inbound-relayed'),
  }
}
