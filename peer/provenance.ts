/**
 * Options of a local change made through the peer (`transact`, `revert`):
 * who made it and why (see {@link ChangeProvenance}: kept in every record
 * of the change and sent with it to peers). Every field is checked here,
 * so that a bad value is refused before anything changes.
 */
import { encodeProvenance, PROVENANCE_LIMITS } from '../crdt/provenance.ts'
import type { ChangeProvenance } from '../persistence/store.ts'

/** Longest `message` of a change, in characters. */
export const MAX_CHANGE_MESSAGE = PROVENANCE_LIMITS.maxMessage
/** Largest `meta` of a change, as canonical JSON bytes. */
export const MAX_CHANGE_META_BYTES = PROVENANCE_LIMITS.maxMetaBytes

/** Options of {@link Peer.transact} and {@link Peer.revert}. */
export interface ChangeOptions extends ChangeProvenance {
  readonly signal?: AbortSignal | undefined
}

/** Checks the provenance of a change (agent, message, meta); `CONCORD_INVALID_ARGUMENT` otherwise. */
export function checkChangeOptions(options: ChangeOptions): void {
  encodeProvenance(options)
}
