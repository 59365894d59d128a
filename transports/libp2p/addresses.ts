/**
 * Multiaddr helpers of the libp2p transport: parsing with typed errors, the
 * PeerId of an address, listen address lists, aborting a wait, and mapping a
 * libp2p dial failure to a {@link ConcordError}.
 */
import type { PeerId } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'

/** Address accepted by {@link Libp2pTransport.listen}. */
export type Libp2pListenAddress = { readonly addresses?: readonly string[] } | string | readonly string[] | undefined

/**
 * Parses a multiaddr.
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT` for anything else.
 */
export function parseMultiaddr(text: string): Multiaddr {
  if (typeof text !== 'string') throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `a multiaddr must be a string, got ${typeof text}`)
  try {
    return multiaddr(text)
  } catch (error) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${text}" is not a multiaddr`, { cause: error })
  }
}

/**
 * The PeerId of the last `/p2p/` component of `ma` (undefined if none).
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT` for an invalid PeerId.
 */
export function peerIdOf(ma: Multiaddr): PeerId | undefined {
  const value = ma.getComponents().findLast((component) => component.name === 'p2p')?.value
  if (value === undefined) return undefined
  try {
    return peerIdFromString(value)
  } catch (error) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${ma}" has an invalid PeerId`, { cause: error })
  }
}

/** The addresses of a {@link Libp2pListenAddress} (undefined: none given). */
export function listenAddresses(address: Libp2pListenAddress): string[] | undefined {
  if (address === undefined) return undefined
  if (typeof address === 'string') return [address]
  if (Array.isArray(address)) return [...(address as readonly string[])]
  const list = (address as { addresses?: readonly string[] }).addresses
  return list === undefined ? undefined : [...list]
}

/** Whether two address lists are equal, in order. */
export function sameAddresses(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((text, i) => text === b[i])
}

/** `promise`, or a `CONCORD_ABORTED` rejection as soon as `signal` aborts. */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  if (signal.aborted) return Promise.reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/**
 * Maps a failed dial of `target` to a ConcordError: `CONCORD_CLOSED` (the
 * transport stopped), `CONCORD_ABORTED`, `CONCORD_FORBIDDEN` (the gater;
 * `onDenied` is called), `CONCORD_TIMEOUT`, else `CONCORD_UNREACHABLE`.
 */
export function toDialError(error: unknown, target: Multiaddr | PeerId, stopped: boolean, onDenied: () => void): ConcordError {
  if (isConcordError(error)) return error
  const name = (error as Error)?.name ?? ''
  const message = (error as Error)?.message ?? String(error)
  if (stopped) return new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped', { cause: error })
  if (name === 'AbortError') return new ConcordError(ErrorCodes.ABORTED, `dial of ${target} aborted`, { cause: error })
  if (/denied|gater/i.test(name) || /denied|gater/i.test(message)) {
    onDenied()
    return new ConcordError(ErrorCodes.FORBIDDEN, `dial of ${target} refused by the allowlist`, { cause: error })
  }
  if (name === 'TimeoutError') return new ConcordError(ErrorCodes.TIMEOUT, `dial of ${target} timed out`, { cause: error })
  return new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${target}: ${message}`, { cause: error })
}
