/**
 * Helpers for tests and benchmarks of the libp2p transport: real nodes on
 * 127.0.0.1, collected so that every one is stopped at the end.
 */
import type { Connection } from '../../transports/transport.ts'
import { createLibp2pTransport, type Libp2pTransport, type Libp2pTransportOptions } from '../../transports/libp2p/index.ts'

/** Tracks transports so a test can stop all of them. */
export class NodeSet {
  readonly all: Libp2pTransport[] = []

  /** Creates a transport (not started) and tracks it. */
  create(options: Libp2pTransportOptions = {}): Libp2pTransport {
    const transport = createLibp2pTransport(options)
    this.all.push(transport)
    return transport
  }

  /** Creates a transport listening on a TCP port of 127.0.0.1; resolves with it and its address. */
  async listening(options: Libp2pTransportOptions = {}, address = '/ip4/127.0.0.1/tcp/0'): Promise<{ transport: Libp2pTransport; address: string }> {
    const transport = this.create(options)
    return { transport, address: await transport.listen({ addresses: [address] }) }
  }

  /** Stops every tracked transport. */
  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((t) => t.stop()))
  }
}

/**
 * Polls `predicate` until it holds; rejects after `deadlineMs` with `what` (and `explain()`, the state at that moment).
 * A deadline, not a timing assertion: it only turns a hang into a failure.
 */
export async function waitFor(what: string, predicate: () => boolean, deadlineMs = 20_000, explain?: () => string): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${explain ? ` (${explain()})` : ''}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Records every Concord connection a transport sees (dials returned plus `connection` events) and their frames. */
export class ConnectionLog {
  readonly connections: Connection[] = []
  /** Frames received, by remote PeerId. */
  readonly received = new Map<string, Uint8Array[]>()

  constructor(transport: Libp2pTransport) {
    transport.events.on('connection', (connection) => this.add(connection))
  }

  /** Tracks a connection (for one returned by `dial`). */
  add(connection: Connection): Connection {
    this.connections.push(connection)
    connection.events.on('message', (frame) => {
      const peer = connection.remoteIdentity ?? ''
      let list = this.received.get(peer)
      if (!list) this.received.set(peer, (list = []))
      list.push(frame)
    })
    return connection
  }

  /** Open connections to `peer`. */
  openTo(peer: string): Connection[] {
    return this.connections.filter((c) => c.open && c.remoteIdentity === peer)
  }

  /** Frames received from `peer`, decoded as UTF-8 text. */
  textsFrom(peer: string): string[] {
    return (this.received.get(peer) ?? []).map((frame) => new TextDecoder().decode(frame))
  }
}
