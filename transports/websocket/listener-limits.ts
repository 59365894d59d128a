/**
 * Connection limits of one WebSocket listener: how many sockets it holds at
 * once, in all and per remote address, for every path it serves (Concord
 * and mounted routes such as y-websocket alike). A socket over a limit is
 * answered `HTTP/1.1 503 Service Unavailable` (with `Retry-After`) and
 * closed, before its request is read.
 */
import type { Duplex } from 'node:stream'

/** Limits of a listener. */
export interface ListenerLimits {
  /** Sockets held at once (default 1024). */
  readonly maxConnections: number
  /** Sockets held at once from one remote address (default 128). */
  readonly maxConnectionsPerAddress: number
}

/** The defaults of {@link ListenerLimits}. */
export const DEFAULT_LISTENER_LIMITS: ListenerLimits = { maxConnections: 1024, maxConnectionsPerAddress: 128 }

/** The address a socket's connections are counted under (IPv4-mapped IPv6 folded to IPv4). */
export function addressOf(socket: { readonly remoteAddress?: string }): string {
  const address = socket.remoteAddress ?? 'unknown'
  return address.startsWith('::ffff:') ? address.slice(7) : address
}

/** Counts the sockets a listener holds, in all and per address. */
export class ConnectionLimiter {
  private total = 0
  private readonly byAddress = new Map<string, number>()
  /** Sockets refused so far, by limit. */
  readonly refused = { total: 0, perAddress: 0 }

  constructor(private readonly limits: ListenerLimits) {}

  /** Sockets held now. */
  get open(): number {
    return this.total
  }

  /** Takes a slot for a socket from `address`; `undefined` if admitted, else why not (the slot is not taken). */
  admit(address: string): string | undefined {
    const fromAddress = this.byAddress.get(address) ?? 0
    if (this.total >= this.limits.maxConnections) {
      this.refused.total++
      return `this listener holds ${this.total} connections, its limit`
    }
    if (fromAddress >= this.limits.maxConnectionsPerAddress) {
      this.refused.perAddress++
      return `this listener holds ${fromAddress} connections from ${address}, the limit per address`
    }
    this.total++
    this.byAddress.set(address, fromAddress + 1)
    return undefined
  }

  /** Gives back the slot of a socket from `address`. */
  release(address: string): void {
    const fromAddress = this.byAddress.get(address) ?? 0
    if (fromAddress <= 1) this.byAddress.delete(address)
    else this.byAddress.set(address, fromAddress - 1)
    this.total = Math.max(0, this.total - 1)
  }
}

/** Answers `socket` with 503 and closes it (at once if the answer cannot be flushed within a second). */
export function refuseWith503(socket: Duplex, why: string): void {
  const body = `${why}; try again later\n`
  socket.on('error', () => socket.destroy())
  try {
    socket.end(
      `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 5\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      () => socket.destroy(),
    )
  } catch {
    socket.destroy()
    return
  }
  setTimeout(() => socket.destroy(), 1_000).unref?.()
}
