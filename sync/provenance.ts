/**
 * The `provenance` HELLO extension (value: `varUint` format, 1): the sender
 * takes PROVENANCE messages (sync/messages.ts), which say who made the next
 * commit and why, so that a change keeps its author and message through
 * every relay (sync/PROTOCOL.md "Provenance"). A peer that does not announce
 * it gets none, and logs a commit it receives under the sending peer.
 * Anti-entropy answers (merged state, not changes) carry none. The
 * `signatures` extension (value `varUint` 1) says the sender takes the
 * authors' signatures of each entry in PROVENANCE (flag bit 3).
 */
import { Decoder, Encoder } from '../crdt/codec.ts'
import { type EncodedProvenance, checkEncodedProvenance } from '../crdt/provenance.ts'
import { checkSignatureShape } from '../crdt/signature.ts'
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
  for (const signature of message.signatures ?? []) if (signature !== undefined) checkSignatureShape(signature)
  return checkEncodedProvenance({ agent: message.agent, message: message.message, metaJson: message.metaJson, authored: message.authored })
}

/** Key of the extension that announces signatures in PROVENANCE (flag bit 3). */
export const SIGNATURES_EXTENSION = 'signatures'
/** The format of the signatures this code speaks (crdt/signature.ts, version 1). */
export const SIGNATURES_FORMAT = 1

/** The HELLO extension that announces signatures. */
export function signaturesExtension(): { readonly key: string; readonly value: Uint8Array } {
  return { key: SIGNATURES_EXTENSION, value: new Encoder(2).writeVarUint(SIGNATURES_FORMAT).finish() }
}

/** Whether a HELLO's extensions announce signatures this code speaks. */
export function takesSignatures(extensions: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }>): boolean {
  const extension = extensions.find((candidate) => candidate.key === SIGNATURES_EXTENSION)
  if (!extension) return false
  try {
    return new Decoder(extension.value).readVarUint() === SIGNATURES_FORMAT
  } catch {
    return false
  }
}

/**
 * Key of the extension that announces anti-entropy answers made of records
 * (value `varUint` 1): the sender of the HELLO takes, in the answer to its
 * VERSIONS or WANT, the logged changes it lacks as commits with their
 * PROVENANCE, as live ones come (sync/PROTOCOL.md "Answers made of
 * records"). Announced only with `provenance`.
 */
export const ANSWER_RECORDS_EXTENSION = 'answer-records'
/** The format of answers made of records this code speaks. */
export const ANSWER_RECORDS_FORMAT = 1

/** The HELLO extension that announces answers made of records. */
export function answerRecordsExtension(): { readonly key: string; readonly value: Uint8Array } {
  return { key: ANSWER_RECORDS_EXTENSION, value: new Encoder(2).writeVarUint(ANSWER_RECORDS_FORMAT).finish() }
}

/** Whether a HELLO's extensions announce answers made of records (with provenance, which carries them). */
export function takesAnswerRecords(extensions: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }>): boolean {
  const extension = extensions.find((candidate) => candidate.key === ANSWER_RECORDS_EXTENSION)
  if (!extension || !takesProvenance(extensions)) return false
  try {
    return new Decoder(extension.value).readVarUint() === ANSWER_RECORDS_FORMAT
  } catch {
    return false
  }
}
