/**
 * How anti-entropy reads the host: expensive work (our VERSIONS, an
 * answer) in slices, each slice's names held while they are read, and the
 * errors that leave a name out (the host cannot read it).
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { SyncHost } from './host.ts'

/**
 * Expensive work (our VERSIONS, an answer) is done in slices of this many
 * names, or of {@link SLICE_BYTES} delta bytes, with a turn of the event
 * loop between slices (`SyncHost.yieldTurn`), so one peer's anti-entropy
 * never holds the loop for long.
 */
export const SLICE_NAMES = 64
/** See {@link SLICE_NAMES}. */
export const SLICE_BYTES = 4 * 1024 * 1024

/**
 * Runs `read` with `names` readable: held by the host (`host.hold`, which
 * may load them) until it returns, when the host holds names; at once
 * otherwise (every name is readable).
 */
export async function withHeld<T>(host: SyncHost, names: readonly string[], read: () => T): Promise<T> {
  if (!host.hold) return read()
  const release = await host.hold(names)
  try {
    return read()
  } finally {
    release()
  }
}

/** Whether `error` says the host cannot read a name (gone, damaged, not held): the name is left out. */
export function unreadable(error: unknown): boolean {
  return isConcordError(error, ErrorCodes.NOT_FOUND) || isConcordError(error, ErrorCodes.CORRUPT_RECORD)
}
