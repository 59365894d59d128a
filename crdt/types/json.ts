/**
 * JSON values held by sets, registers and maps. A value's identity is its
 * canonical JSON text: object keys sorted (UTF-16 order), no whitespace, so
 * `{a:1,b:2}` and `{b:2,a:1}` are the same set element.
 */
import { ConcordError, DecodeError, ErrorCodes, withArticle } from '../errors.ts'

/** A JSON-able value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** Deepest nesting accepted in a value (guards the stack against hostile input). */
export const MAX_JSON_DEPTH = 64

class NotJson extends Error {}

function canonical(value: unknown, depth: number, seen: Set<object>): string {
  if (depth > MAX_JSON_DEPTH) throw new NotJson(`nested deeper than ${MAX_JSON_DEPTH}`)
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw new NotJson(`${value} is not a JSON number`)
      return JSON.stringify(value)
    case 'object': {
      if (value === null) return 'null'
      if (seen.has(value)) throw new NotJson('cyclic value')
      seen.add(value)
      try {
        if (Array.isArray(value)) {
          return `[${value.map((item) => canonical(item, depth + 1, seen)).join(',')}]`
        }
        const proto = Object.getPrototypeOf(value)
        if (proto !== Object.prototype && proto !== null) throw new NotJson(`${withArticle(proto?.constructor?.name ?? 'non-plain')} object is not JSON`)
        const keys = Object.keys(value).sort()
        const record = value as Record<string, unknown>
        return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(record[key], depth + 1, seen)}`).join(',')}}`
      } finally {
        seen.delete(value)
      }
    }
    default:
      throw new NotJson(`${withArticle(typeof value)} is not JSON`)
  }
}

/**
 * The canonical JSON text of `value`. Throws ConcordError
 * `CONCORD_INVALID_ARGUMENT` for anything not JSON-able (undefined, NaN,
 * functions, class instances, cycles, nesting deeper than {@link MAX_JSON_DEPTH}).
 */
export function canonicalJson(value: unknown): string {
  try {
    return canonical(value, 0, new Set())
  } catch (error) {
    if (error instanceof NotJson) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `not a JSON value: ${error.message}`)
    throw error
  }
}

/**
 * Whether arrays and objects in JSON `text` nest deeper than `limit`
 * (outside strings). A linear scan that allocates nothing, to run before
 * `JSON.parse` on untrusted text: it builds every nested level before any
 * depth check could run (4 MB of `[` took 0.7 s and 110 MiB).
 */
export function nestingExceeds(text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash escapes the next character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

/** Parses canonical JSON text; DecodeError unless it is valid and canonical. */
export function parseCanonicalJson(text: string): Json {
  if (nestingExceeds(text, MAX_JSON_DEPTH + 1)) throw new DecodeError(`invalid JSON value: nested deeper than ${MAX_JSON_DEPTH}`)
  let parsed: Json
  try {
    parsed = JSON.parse(text) as Json
  } catch (cause) {
    throw new DecodeError('invalid JSON value', { cause })
  }
  let again: string
  try {
    again = canonical(parsed, 0, new Set())
  } catch (cause) {
    throw new DecodeError(`invalid JSON value: ${(cause as Error).message}`, { cause })
  }
  if (again !== text) throw new DecodeError('JSON value not in canonical form')
  return parsed
}

/** A deep copy of a JSON value through its canonical text (so callers cannot alias stored values). */
export function copyJson<T extends Json>(value: T): T {
  return JSON.parse(canonicalJson(value)) as T
}

/** Orders JSON values by canonical text (the deterministic order of multi-values). */
export function compareJson(a: Json, b: Json): number {
  const x = canonicalJson(a)
  const y = canonicalJson(b)
  return x < y ? -1 : x > y ? 1 : 0
}
