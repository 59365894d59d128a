/**
 * Pages of values: every value a tool returns fits in
 * {@link MCP_LIMITS.maxResultChars} characters of JSON. A `path` (a JSON
 * Pointer, RFC 6901) selects a part; a text is returned as a range
 * (`offset`, `limit` characters), an array or object as a page of its
 * items or keys; a nested part too large for the page is replaced by a stub
 * `{ "$more": { path, chars } }` that says how to read it.
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Json } from '../crdt/types/json.ts'
import { clip, invalid } from './errors.ts'
import { MCP_LIMITS } from './limits.ts'

/** A page of a value. */
export interface Page {
  /** The part returned (a text range, a page of items, or the whole value). */
  readonly value: Json
  /** JSON Pointer of the part ('' for the whole value). */
  readonly path: string
  readonly kind: 'text' | 'array' | 'object' | 'scalar'
  /** Characters of the text, items of the array, keys of the object at `path`. */
  readonly total?: number
  readonly offset?: number
  /** Where the next page starts, when there is one. */
  readonly nextOffset?: number
  /** True when nested parts were replaced by `$more` stubs. */
  readonly truncated?: boolean
}

/** What part of a value to return. */
export interface PageRequest {
  readonly path?: string | undefined
  readonly offset?: number | undefined
  readonly limit?: number | undefined
}

import { formatPointer } from '../persistence/history/json-values.ts'

export { formatPointer, toJson } from '../persistence/history/json-values.ts'

/** Parses a JSON Pointer into its reference tokens; `CONCORD_INVALID_ARGUMENT` when malformed or too deep. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return []
  if (!pointer.startsWith('/')) throw invalid(`path "${clip(pointer, 60)}" is not a JSON Pointer (it starts with "/", or is "" for the whole value)`)
  const tokens = pointer.slice(1).split('/')
  if (tokens.length > MCP_LIMITS.maxPathSegments) throw invalid(`path has ${tokens.length} segments, more than ${MCP_LIMITS.maxPathSegments}`)
  return tokens.map((token) => {
    if (/~[^01]|~$/.test(token)) throw invalid(`path "${clip(pointer, 60)}": "~" must be written ~0 and "/" ~1`)
    return token.replace(/~1/g, '/').replace(/~0/g, '~')
  })
}

/** The part of `value` at `tokens`; `CONCORD_NOT_FOUND` naming the path when it does not exist. */
export function resolve(value: Json, tokens: readonly string[], what: string): Json {
  let current: Json = value
  for (const [i, token] of tokens.entries()) {
    const missing = () => new ConcordError(ErrorCodes.NOT_FOUND, `path ${formatPointer(tokens.slice(0, i + 1))} does not exist in ${what}`)
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= current.length) throw missing()
      current = current[Number(token)]
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, token)) throw missing()
      current = current[token]
    } else {
      throw missing()
    }
  }
  return current
}

/** The size of a value as compact JSON, in characters. */
export function jsonChars(value: Json): number {
  return JSON.stringify(value).length
}

/** Where a range of a text may end without splitting a surrogate pair. */
function safeEnd(text: string, end: number): number {
  if (end > 0 && end < text.length) {
    const code = text.charCodeAt(end - 1)
    if (code >= 0xd800 && code <= 0xdbff) return end - 1
  }
  return end
}

/** A page of `value` (see the module comment). `what` names the value in errors ("notes", "notes at seq 3"). */
export function pageOf(value: Json, request: PageRequest, what: string): Page {
  const path = request.path ?? ''
  const tokens = parsePointer(path)
  const target = resolve(value, tokens, what)
  const offset = request.offset ?? 0
  if (!Number.isSafeInteger(offset) || offset < 0) throw invalid('offset must be a whole number >= 0')
  if (typeof target === 'string') {
    const limit = Math.min(request.limit ?? MCP_LIMITS.textPageChars, MCP_LIMITS.maxResultChars)
    if (offset > target.length) throw invalid(`offset ${offset} is past the end of the text (${target.length} characters)`)
    const end = Math.max(offset + 1, safeEnd(target, Math.min(target.length, offset + limit)))
    const text = target.slice(offset, Math.min(end, target.length))
    const next = offset + text.length
    return { value: text, path, kind: 'text', total: target.length, offset, ...(next < target.length ? { nextOffset: next } : {}) }
  }
  if (Array.isArray(target) || (target !== null && typeof target === 'object')) {
    const limit = Math.min(request.limit ?? MCP_LIMITS.maxPageItems, MCP_LIMITS.maxPageItems)
    const entries: Array<[string, Json]> = Array.isArray(target) ? target.map((item, i) => [String(i), item]) : Object.entries(target)
    if (offset > entries.length) throw invalid(`offset ${offset} is past the end (${entries.length} items)`)
    let budget = MCP_LIMITS.maxResultChars
    let truncated = false
    const taken: Array<[string, Json]> = []
    for (let i = offset; i < entries.length && taken.length < limit; i++) {
      const [key, item] = entries[i]
      const chars = jsonChars(item) + key.length + 4
      if (chars <= budget) {
        taken.push([key, item])
        budget -= chars
        continue
      }
      if (taken.length > 0 && budget < 200) break
      taken.push([key, { $more: { path: formatPointer([...tokens, key]), chars: chars - key.length - 4 } }])
      budget -= 120
      truncated = true
    }
    const next = offset + taken.length
    const page: Json = Array.isArray(target) ? taken.map(([, item]) => item) : Object.fromEntries(taken)
    return {
      value: page,
      path,
      kind: Array.isArray(target) ? 'array' : 'object',
      total: entries.length,
      offset,
      ...(next < entries.length ? { nextOffset: next } : {}),
      ...(truncated ? { truncated } : {}),
    }
  }
  return { value: target, path, kind: 'scalar' }
}
