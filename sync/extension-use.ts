/**
 * Which optional HELLO extensions a session uses: what this side takes (its
 * options: provenance, signatures, answer records, independent bundles),
 * what the remote's HELLO announced (read once), and so what a local
 * commit carries to the remote (its provenance and its entries'
 * signatures) and what an answer to it may be made of (records).
 */
import type { EncodedProvenance } from '../crdt/provenance.ts'
import { independentExtension, reconcileExtension, windowBytesExtension } from './extensions.ts'
import type { DeltaEntry } from './messages.ts'
import type { OutgoingProvenance } from './outbound.ts'
import { presenceExtension } from './presence.ts'
import { answerRecordsExtension, provenanceExtension, signaturesExtension, takesAnswerRecords, takesProvenance, takesSignatures } from './provenance.ts'
import type { SessionOptions } from './session-types.ts'

/** A HELLO extension: its key and value. */
type Extension = { readonly key: string; readonly value: Uint8Array }

/** What a remote announced: the extensions of its HELLO. */
type Announced = { readonly extensions: ReadonlyArray<Extension> }

/** @internal the extensions one session uses (see the module comment). */
export class ExtensionUse {
  /** What the remote's HELLO announced, read once (its extensions are decoded, and every commit asks). */
  private remoteTakes: { readonly of: object; readonly signatures: boolean; readonly provenance: boolean } | undefined

  constructor(private readonly options: SessionOptions) {}

  /** Whether this side takes (and sends) provenance. */
  get provenance(): boolean {
    return this.options.provenance !== false
  }

  /** Whether this side takes (and sends) anti-entropy answers made of records: with provenance, unless `answerRecords: false`. */
  get answerRecords(): boolean {
    return this.provenance && this.options.answerRecords !== false
  }

  /** Whether this side takes (and sends) INDEPENDENT bundles. */
  get independent(): boolean {
    return this.options.independent !== false
  }

  /** Whether this side takes (and sends) the authors' signatures: with provenance, unless `signatures: false`. */
  get signatures(): boolean {
    return this.provenance && this.options.signatures !== false
  }

  /** The extensions of this side's HELLO (`windowBytes`: its byte window). */
  hello(windowBytes: number): Extension[] {
    return [
      windowBytesExtension(windowBytes),
      ...(this.options.presence ? [presenceExtension()] : []),
      ...(this.provenance ? [provenanceExtension()] : []),
      ...(this.signatures ? [signaturesExtension()] : []),
      ...(this.answerRecords ? [answerRecordsExtension()] : []),
      ...(this.options.reconcile !== false ? [reconcileExtension()] : []),
      ...(this.independent ? [independentExtension()] : []),
    ]
  }

  private remoteTaking(remote: Announced) {
    if (this.remoteTakes?.of !== remote) {
      this.remoteTakes = { of: remote, signatures: takesSignatures(remote.extensions), provenance: takesProvenance(remote.extensions) }
    }
    return this.remoteTakes
  }

  /** Whether the signatures of the remote's commits are taken: both sides take signatures. */
  signable(remote: Announced): boolean {
    return this.signatures && this.remoteTaking(remote).signatures
  }

  /** How an answer to `remote` may be made of records (both sides take them), with signatures if both take those; else undefined. */
  answerRecordsFor(remote: Announced): { readonly agentId: string; readonly signatures: boolean } | undefined {
    return this.answerRecords && takesAnswerRecords(remote.extensions)
      ? { agentId: this.options.agentId, signatures: this.signatures && takesSignatures(remote.extensions) }
      : undefined
  }

  /**
   * The provenance a local commit of `entries` (claimed: `claimed`) carries
   * to `remote`, if any: the author goes along when it is not this peer's
   * own plain change (the remote assumes that), or signed it.
   */
  outgoing(remote: Announced, claimed: EncodedProvenance | undefined, entries: readonly DeltaEntry[]): OutgoingProvenance | undefined {
    const signatures =
      this.signatures && this.remoteTaking(remote).signatures && entries.some((entry) => entry.signature !== undefined)
        ? entries.map((entry) => entry.signature)
        : undefined
    return claimed &&
      this.provenance &&
      this.remoteTaking(remote).provenance &&
      (claimed.agent !== this.options.agentId || claimed.message !== undefined || claimed.metaJson !== undefined || signatures !== undefined)
      ? signatures
        ? { ...claimed, signatures }
        : claimed
      : undefined
  }
}
