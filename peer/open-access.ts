/**
 * The `open-access` warning: a peer that listens beyond loopback while it
 * requires no credentials lets any machine that reaches the address read
 * and write every name. Loopback means 127.0.0.0/8, ::1 (and IPv4-mapped
 * loopback) or `localhost`.
 */
import { BlockList, isIP } from 'node:net'

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')
loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6')

/** True when `host` (an IP address or `localhost`, brackets allowed) is a loopback address. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (bare.toLowerCase() === 'localhost') return true
  const family = isIP(bare)
  if (family === 0) return false
  return loopback.check(bare, family === 4 ? 'ipv4' : 'ipv6')
}

/** The host of a multiaddr (`/ip4/H/...`, `/ip6/H/...`, `/dns4/H/...`), or undefined. */
export function multiaddrHost(multiaddr: string): string | undefined {
  const match = /^\/(?:ip4|ip6|dns|dns4|dns6)\/([^/]+)/.exec(multiaddr)
  return match?.[1]
}

/** The warning to give for listening on `addresses` with no credentials, or undefined when every address is loopback. */
export function openAccessWarning(addresses: readonly string[], transport: string): { kind: 'open-access'; message: string; address: string } | undefined {
  const open = addresses.find((address) => !isLoopbackHost(address))
  if (open === undefined) return undefined
  return {
    kind: 'open-access',
    address: open,
    message:
      `listening on ${open} (${transport}) with no credentials: any machine that reaches it can read and write every name. ` +
      'Require credentials (auth.token or auth.accept; concord serve --token or --acl), or listen on 127.0.0.1',
  }
}
