/**
 * The transport conformance suite (concord-crdt/testing) against the libp2p transport (two
 * real libp2p nodes on 127.0.0.1, TCP and WebSocket), with autoConnect off:
 * the suite checks the raw connection contract, and reconnection after its
 * deliberate closes would add connections it does not expect.
 */
import { describe, it } from 'node:test'
import { createLibp2pTransport } from '../../transports/libp2p/index.ts'
import { runTransportTests } from '../../testing/index.ts'

for (const [label, listen] of [
  ['tcp', '/ip4/127.0.0.1/tcp/0'],
  ['websocket', '/ip4/127.0.0.1/tcp/0/ws'],
] as const) {
  runTransportTests({ describe, it }, `libp2p (${label})`, async () => {
    // autoConnect off: the suite owns every connection (no reconnection after its closes)
    const server = createLibp2pTransport({ autoConnect: false })
    const address = await server.listen({ addresses: [listen] })
    const client = createLibp2pTransport({ autoConnect: false })
    return {
      server,
      client,
      address,
      teardown: async () => {
        await Promise.all([client.stop(), server.stop()])
      },
    }
  })
}
