/**
 * Provenance of a change: who made it (the authoring agent, not the peer
 * that relayed it) and, optionally, why (`message`) and free-form
 * application metadata (`meta`: tool, session, model, causedBy, ...). Kept
 * in every record of the change (persistence/format/record.ts) and sent
 * with it to peers that announce the `provenance` HELLO extension
 * (sync/PROTOCOL.md). The bounds are the same wherever it comes from: an
 * API call, a record, the wire.
 */
import { ConcordError, ErrorCodes } from './errors.ts'
import type { HlcTimestamp } from './hlc.ts'
import { canonicalJson } from './types/json.ts'

/** Who made a change and why. */
export interface Provenance {
  /** The authoring agent (default: the replica that makes the change). */
  readonly agent?: string | undefined
  /** Why the change was made. */
  readonly message?: string | undefined
  /** Application metadata: a JSON object. */
  readonly meta?: Readonly<Record<string, unknown>> | undefined
}

/** Provenance as stored and sent: `meta` as canonical JSON. */
export interface EncodedProvenance {
  readonly agent?: string | undefined
  readonly message?: string | undefined
  readonly metaJson?: string | undefined
  /** When the author made the change (its HLC there), for a change that arrived from elsewhere. */
  readonly authored?: HlcTimestamp | undefined
}

/** Bounds of a change's provenance. */
export const PROVENANCE_LIMITS = {
  /** Longest agent id, in characters. */
  maxAgent: 256,
  /** Longest `message`, in characters. */
  maxMessage: 4096,
  /** Largest `meta`, as canonical JSON bytes. */
  maxMetaBytes: 16 * 1024,
} as const

const encoder = new TextEncoder()

function invalid(message: string): ConcordError {
  return new ConcordError(ErrorCodes.INVALID_ARGUMENT, message)
}

/** Checks `agent` and `message` (`CONCORD_INVALID_ARGUMENT`). */
function checkStrings(agent: unknown, message: unknown): void {
  if (agent !== undefined && (typeof agent !== 'string' || agent.length === 0 || agent.length > PROVENANCE_LIMITS.maxAgent)) {
    throw invalid(`agent must be a non-empty string of at most ${PROVENANCE_LIMITS.maxAgent} characters`)
  }
  if (message !== undefined && (typeof message !== 'string' || message.length > PROVENANCE_LIMITS.maxMessage)) {
    throw invalid(`message must be a string of at most ${PROVENANCE_LIMITS.maxMessage} characters`)
  }
}

/** Checks a change's provenance and encodes its `meta`; `CONCORD_INVALID_ARGUMENT` when out of bounds. */
export function encodeProvenance(provenance: Provenance): EncodedProvenance {
  const { agent, message, meta } = provenance
  checkStrings(agent, message)
  let metaJson: string | undefined
  if (meta !== undefined) {
    if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) throw invalid('meta must be a JSON object')
    metaJson = canonicalJson(meta)
    const bytes = encoder.encode(metaJson).length
    if (bytes > PROVENANCE_LIMITS.maxMetaBytes) throw invalid(`meta is ${bytes} bytes of JSON, over the limit of ${PROVENANCE_LIMITS.maxMetaBytes}`)
  }
  return { agent, message, metaJson }
}

/**
 * Checks provenance that arrived encoded (from the wire, a record): the
 * bounds, and that `metaJson` is the canonical JSON of an object.
 * `CONCORD_INVALID_ARGUMENT` otherwise.
 */
export function checkEncodedProvenance(provenance: EncodedProvenance): EncodedProvenance {
  checkStrings(provenance.agent, provenance.message)
  if (provenance.metaJson !== undefined) {
    if (typeof provenance.metaJson !== 'string' || encoder.encode(provenance.metaJson).length > PROVENANCE_LIMITS.maxMetaBytes) {
      throw invalid(`meta must be at most ${PROVENANCE_LIMITS.maxMetaBytes} bytes of JSON`)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(provenance.metaJson)
    } catch {
      throw invalid('meta is not JSON')
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalid('meta must be a JSON object')
  }
  return provenance
}

/** The `meta` object of encoded provenance (undefined when none, or not an object). */
export function metaOf(metaJson: string | undefined): Readonly<Record<string, unknown>> | undefined {
  if (metaJson === undefined) return undefined
  try {
    const parsed = JSON.parse(metaJson)
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}
