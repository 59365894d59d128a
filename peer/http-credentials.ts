/**
 * Credentials of a plain HTTP request to a peer's listener (a y-websocket
 * upgrade, an MCP request), which cannot run the sync handshake: a bearer
 * token and the agent id it claims, checked by the peer's admission.
 */
import type { IncomingMessage } from 'node:http'
import { WIRE_LIMITS } from '../sync/index.ts'

/**
 * The credentials of an HTTP request (a y-websocket upgrade, an MCP
 * request): the token from `Authorization: Bearer` or `?token=`, the peer
 * id from `X-Concord-Peer` or `?peer=`; undefined when they are malformed
 * (refused like wrong ones).
 */
export function readCredentials(request: IncomingMessage, url: URL): { readonly peer?: string; readonly token: string } | undefined {
  let token = url.searchParams.get('token') ?? ''
  const authorization = request.headers.authorization
  if (authorization !== undefined) {
    const bearer = /^Bearer +(\S+) *$/i.exec(authorization)
    if (!bearer) return undefined
    token = bearer[1]
  }
  const header = request.headers['x-concord-peer']
  const peer = typeof header === 'string' ? header : (url.searchParams.get('peer') ?? undefined)
  if (Buffer.byteLength(token, 'utf8') > WIRE_LIMITS.maxTokenBytes) return undefined
  if (peer !== undefined && (peer.length === 0 || peer.length > 256)) return undefined
  return { peer, token }
}
