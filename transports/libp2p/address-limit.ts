/**
 * A per-address cap on inbound libp2p connections, the one limit libp2p's
 * connection manager does not have (it has a total, `maxConnections`; one on
 * connections still upgrading, `maxIncomingPendingConnections`; a rate per
 * host, `inboundConnectionThreshold`; and the upgrade timeout). Applied in
 * the connection gater's `denyInboundConnection`, right after the socket is
 * accepted and before Noise: a host over the cap is dropped before it costs
 * a handshake. A connection is counted until its socket closes, upgrading
 * or upgraded.
 */
import type { MultiaddrConnection } from '@libp2p/interface'

/** The host part of a multiaddr (`/ip4/1.2.3.4/tcp/5` -> `1.2.3.4`), or the whole address without one. */
function hostOf(connection: MultiaddrConnection): string {
  const components = connection.remoteAddr.getComponents()
  const host = components.find((component) => component.name === 'ip4' || component.name === 'ip6' || component.name.startsWith('dns'))
  const value = host?.value ?? connection.remoteAddr.toString()
  return value.startsWith('::ffff:') ? value.slice(7) : value
}

/** Counts inbound connections per remote host and refuses those over `maxPerAddress`. */
export class InboundAddressLimit {
  private readonly byHost = new Map<string, number>()
  /** Connections refused so far. */
  refused = 0

  constructor(private readonly maxPerAddress: number) {}

  /** The gater hook: true to refuse `connection`. */
  deny(connection: MultiaddrConnection): boolean {
    const host = hostOf(connection)
    const open = this.byHost.get(host) ?? 0
    if (open >= this.maxPerAddress) {
      this.refused++
      return true
    }
    this.byHost.set(host, open + 1)
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      const now = this.byHost.get(host) ?? 1
      if (now <= 1) this.byHost.delete(host)
      else this.byHost.set(host, now - 1)
    }
    connection.addEventListener('close', release, { once: true })
    if (connection.status === 'closed' || connection.status === 'aborted' || connection.status === 'reset') release()
    return false
  }

  /** Inbound connections counted from `host` now (for tests and diagnostics). */
  openFrom(host: string): number {
    return this.byHost.get(host) ?? 0
  }
}
