/**
 * Options of a local change made through the peer (`transact`, `revert`):
 * who made it and why. See {@link ChangeProvenance} for what is recorded
 * today; every field is checked here, so that a bad value is refused before
 * anything changes.
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { canonicalJson } from '../crdt/types/json.ts'
import type { ChangeProvenance } from '../persistence/store.ts'

/** Longest `message` of a change, in characters. */
export const MAX_CHANGE_MESSAGE = 4096
/** Largest `meta` of a change, as canonical JSON bytes. */
export const MAX_CHANGE_META_BYTES = 16 * 1024

/** Options of {@link Peer.transact} and {@link Peer.revert}. */
export interface ChangeOptions extends ChangeProvenance {
  readonly signal?: AbortSignal | undefined
}

/** Checks the provenance of a change (agent, message, meta); `CONCORD_INVALID_ARGUMENT` otherwise. */
export function checkChangeOptions(options: ChangeOptions): void {
  const { agent, message, meta } = options
  if (agent !== undefined && (typeof agent !== 'string' || agent.length === 0 || agent.length > 256)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'agent must be a non-empty string of at most 256 characters')
  }
  if (message !== undefined && (typeof message !== 'string' || message.length > MAX_CHANGE_MESSAGE)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `message must be a string of at most ${MAX_CHANGE_MESSAGE} characters`)
  }
  if (meta !== undefined) {
    if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'meta must be a JSON object')
    }
    const bytes = new TextEncoder().encode(canonicalJson(meta)).length
    if (bytes > MAX_CHANGE_META_BYTES)
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `meta is ${bytes} bytes of JSON, over the limit of ${MAX_CHANGE_META_BYTES}`)
  }
}
