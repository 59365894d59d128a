/**
 * Values as JSON for the history queries (diff, blame) and the doors that
 * show them (MCP, CLI, inspector): any replica value as plain JSON (bytes
 * as `{ $bytes: base64 }`), JSON Pointers, and the fields of a Yjs document.
 * No Node-only API: these run in a browser peer too.
 */
import type * as Y from 'yjs'
import { kindOf } from '../../crdt/documents/yjs-view.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { Json } from '../../crdt/types/json.ts'

/** Bounds of one query result (what one page of a door shows). */
export const QUERY_LIMITS = {
  /** Items (spans, paths, elements, patch operations) in one result. */
  maxItems: 200,
  /** Characters of JSON in one patch. */
  maxResultChars: 24_000,
  /** Records `blame` replays at most. */
  maxBlameRecords: 2000,
} as const

function base64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

/** Any replica value as JSON: bytes as `{ $bytes: base64 }`, non-finite numbers and undefined as null (fields left out). */
export function toJson(value: unknown, depth = 0): Json {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  if (depth > 256) return null
  if (value instanceof Uint8Array) return { $bytes: base64(value) }
  if (Array.isArray(value)) return value.map((item) => toJson(item, depth + 1))
  if (typeof value === 'object') {
    const out: { [key: string]: Json } = {}
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) if (item !== undefined) out[key] = toJson(item, depth + 1)
    return out
  }
  return null
}

/** A JSON Pointer (RFC 6901) of reference tokens. */
export function formatPointer(tokens: readonly (string | number)[]): string {
  return tokens.map((token) => `/${String(token).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')
}

/** The top-level fields of a Yjs document and their kinds (empty ones left out). */
export function documentFields(doc: Y.Doc): Array<{ readonly field: string; readonly kind: string }> {
  const out: Array<{ field: string; kind: string }> = []
  for (const [field, type] of doc.share) {
    const kind = kindOf(type)
    if (kind !== 'empty') out.push({ field, kind })
  }
  return out.sort((a, b) => (a.field < b.field ? -1 : 1))
}

const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max)}...`)

/**
 * The text field an edit or a read means: `field` when given (it must be a
 * text, or empty), else the document's only text, else `text` in a
 * document with no text yet. Several texts and no `field`: refused
 * (`CONCORD_INVALID_ARGUMENT`), naming them.
 */
export function chooseTextField(doc: Y.Doc, field: string | undefined): string {
  const fields = documentFields(doc)
  if (field !== undefined) {
    const kind = fields.find((f) => f.field === field)?.kind
    if (kind !== undefined && kind !== 'text')
      throw new ConcordError(
        ErrorCodes.INVALID_ARGUMENT,
        `field "${clip(field, 60)}" of this document is ${kind === 'xml' ? 'an XML fragment' : `a ${kind}`}, not a text`,
      )
    return field
  }
  const texts = fields.filter((f) => f.kind === 'text').map((f) => f.field)
  if (texts.length === 1) return texts[0]
  if (texts.length > 1) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `this document has several texts (${texts.slice(0, 10).join(', ')}): give "field"`)
  return 'text'
}
