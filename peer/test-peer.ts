/**
 * `createTestPeer` (exported by concord-crdt/testing): a Node peer with the test
 * hooks a user does not set (`PeerTestHooks`: its replica creator, its
 * clock, its session ticks), for tests and simulations that drive a peer in
 * virtual time, e.g. over the seeded network of concord/transports/memory.
 */
import type { PeerOptions, PeerTestHooks } from './options.ts'
import { openPeer, type Peer } from './peer.ts'

/** The options of {@link createTestPeer}: a peer's options and its test hooks. */
export interface TestPeerOptions extends PeerOptions, PeerTestHooks {}

/** Creates a peer as `createPeer` does, honouring the test hooks. */
export function createTestPeer(options: TestPeerOptions): Promise<Peer> {
  return openPeer(options)
}
