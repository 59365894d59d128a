/**
 * What a failed WebSocket dial or listen says: the address checked before dialing
 * (`ws:` or `wss:`, no credentials in it), and a failure worded after what
 * answered (nothing, a refusal, an HTTP status, a Concord server pointing at
 * its path), so a caller knows what to change.
 */
import type { IncomingMessage } from 'node:http'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** Response header naming the path a Concord server serves its protocol at (sent with its 404). */
export const CONCORD_PATH_HEADER = 'x-concord-path'

/**
 * Parses a dial address; `CONCORD_INVALID_ARGUMENT` unless it is a `ws://`
 * or `wss://` URL without credentials.
 */
export function parseWebSocketUrl(address: unknown): URL {
  if (typeof address !== 'string' || address.length === 0) {
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `a WebSocket address must be a non-empty string such as ws://host:4400/concord, got ${describe(address)}`,
    )
  }
  let url: URL
  try {
    url = new URL(address)
  } catch {
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `"${address}" is not a URL: give ws://host:port/concord (or wss://), or a libp2p multiaddr starting with /`,
    )
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    const scheme = url.protocol === 'https:' ? 'wss' : 'ws'
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `"${address}" is an ${url.protocol.slice(0, -1).toUpperCase()} URL: Concord peers speak WebSocket, give ${scheme}://${url.host}${url.pathname === '/' ? '/concord' : url.pathname}`,
    )
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `"${address}" has the scheme ${url.protocol.slice(0, -1)}: give ws://host:port/concord or wss://host:port/concord`,
    )
  }
  if (url.username !== '' || url.password !== '') {
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `the WebSocket address carries credentials: remove them from the URL and present them with auth.token (sent in the handshake)`,
    )
  }
  return url
}

function describe(value: unknown): string {
  if (typeof value === 'string') return 'an empty string'
  return value === null ? 'null' : typeof value
}

/** The error of a dial that got an HTTP response instead of a WebSocket upgrade. */
export function unexpectedResponseError(address: string, response: IncomingMessage): ConcordError {
  const path = safePath(address)
  const served = response.headers[CONCORD_PATH_HEADER]
  const concordPath = typeof served === 'string' && served.startsWith('/') && served.length <= 256 ? served : undefined
  const status = `HTTP ${response.statusCode ?? '?'} at ${path}`
  const hint =
    concordPath !== undefined
      ? `; Concord peers listen at ${concordPath}`
      : response.statusCode === 404
        ? ' (is this the Concord path? a Concord peer serves it at /concord)'
        : ' (not a Concord peer?)'
  return new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${address}: ${status}${hint}`)
}

/** The error of a dial whose socket failed (refused, not found, reset, TLS, timeout). */
export function socketError(address: string, error: Error & { code?: string }): ConcordError {
  const host = safeHost(address)
  let why: string
  switch (error.code) {
    case 'ECONNREFUSED':
      why = `connection refused: nothing listens at ${host}`
      break
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      why = `the host of ${host} was not found (DNS)`
      break
    case 'ECONNRESET':
      why = `the connection was reset by ${host}`
      break
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      why = `no route to ${host}`
      break
    case 'ETIMEDOUT':
      why = `${host} did not answer in time`
      break
    default:
      why = error.message
  }
  return new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${address}: ${why}`, { cause: error })
}

function safePath(address: string): string {
  try {
    return new URL(address).pathname
  } catch {
    return address
  }
}

function safeHost(address: string): string {
  try {
    return new URL(address).host
  } catch {
    return address
  }
}

/** The error of a `listen` that could not bind: `CONCORD_ADDRESS_IN_USE` for a taken port, else `CONCORD_INVALID_ARGUMENT`. */
export function listenError(error: Error & { code?: string }, host: string, port: number): ConcordError {
  switch (error.code) {
    case 'EADDRINUSE':
      return new ConcordError(
        ErrorCodes.ADDRESS_IN_USE,
        `port ${port} is in use on ${host} (another concord serve?): stop it, or pick another port (0: any free port)`,
        { cause: error },
      )
    case 'EACCES':
      return new ConcordError(ErrorCodes.INVALID_ARGUMENT, `not allowed to listen on port ${port} of ${host} (ports below 1024 need privileges)`, {
        cause: error,
      })
    case 'EADDRNOTAVAIL':
      return new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot listen on ${host}: not an address of this machine (0.0.0.0: every interface)`, {
        cause: error,
      })
    default:
      return new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot listen on ${host}:${port}: ${error.message}`, { cause: error })
  }
}
