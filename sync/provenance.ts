/**
 * The `provenance` HELLO extension (value: `varUint` format, 1): the sender
 * takes PROVENANCE messages (sync/messages.ts), which say who made the next
 * commit and why, so that a change keeps its author and message through
 * every relay (sync/PROTOCOL.md "Provenance"). A peer that does not announce
 * it gets none, and logs a commit it receives under the sending peer.
 * Anti-entropy answers (merged state, not changes) carry none.
 */
import { Decoder, Encoder } from '../crdt/codec.ts'
import { type EncodedProvenance, checkEncodedProvenance } from '../crdt/provenance.ts'
import type { ProvenanceMessage } from './messages.ts'

/** Key of the extension. */
export const PROVENANCE_EXTENSION = 'provenance'
/** The format of PROVENANCE this code speaks. */
export const PROVENANCE_FORMAT = 1

/** The HELLO extension that announces provenance. */
export function provenanceExtension(): { readonly key: string; readonly value: Uint8Array } {
  return { key: PROVENANCE_EXTENSION, value: new Encoder(2).writeVarUint(PROVENANCE_FORMAT).finish() }
}

/** Whether a HELLO's extensions announce a provenance format this code speaks. */
export function takesProvenance(extensions: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }>): boolean {
  const extension = extensions.find((candidate) => candidate.key === PROVENANCE_EXTENSION)
  if (!extension) return false
  try {
    return new Decoder(extension.value).readVarUint() === PROVENANCE_FORMAT
  } catch {
    return false
  }
}

/**
 * The provenance a PROVENANCE message claims, checked against the bounds
 * (crdt/provenance.ts: characters, meta a JSON object); throws
 * `CONCORD_INVALID_ARGUMENT` when out of them.
 */
export function provenanceOf(message: ProvenanceMessage): EncodedProvenance {
  return checkEncodedProvenance({ agent: message.agent, message: message.message, metaJson: message.metaJson, authored: message.authored })
}
