/**
 * What changed in a name between two states, as structured data per type:
 * a counter's delta, a set's added and removed elements, a register's old
 * and new value, a flag's, a JSON Patch (RFC 6902, fast-json-patch's
 * `compare`) for maps and Automerge documents, and for each text of a Yjs
 * document the inserted and deleted spans (jsdiff's word diff; past
 * {@link MAX_EDIT_LENGTH} edits, one replaced span between the common
 * prefix and suffix). Computed from the two values (the states come from
 * `at`); `queries.ts` adds the records in between with their authors.
 * Bounded: at most {@link QUERY_LIMITS.maxItems}
 * operations, each text cut at 2,000 characters, with `truncated` said.
 */
import { diffWordsWithSpace } from 'diff'
import jsonpatch from 'fast-json-patch'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { canonicalJson, type Json } from '../../crdt/types/json.ts'
import { documentFields, QUERY_LIMITS, toJson } from './json-values.ts'

const { compare } = jsonpatch

/** Edits beyond which a text diff gives one replaced span instead of a minimal diff. */
const MAX_EDIT_LENGTH = 2000
/** Characters of one span's text in a diff. */
const MAX_SPAN_CHARS = 2000

/** One span of a text diff: `at` is its index in the new text (a deletion: where the text was). */
export interface TextSpan {
  readonly op: 'insert' | 'delete'
  readonly at: number
  readonly text: string
  /** The span's full length when `text` was cut. */
  readonly length?: number
}

/** What changed, by kind of value. */
export type Changes =
  | { readonly kind: 'counter'; readonly from: number; readonly to: number; readonly delta: number }
  | { readonly kind: 'set'; readonly added: Json[]; readonly removed: Json[]; readonly truncated?: boolean }
  | { readonly kind: 'value'; readonly from: Json; readonly to: Json }
  | { readonly kind: 'json'; readonly patch: Json[]; readonly truncated?: boolean }
  | {
      readonly kind: 'document'
      readonly fields: Array<
        { field: string; kind: 'text'; spans: TextSpan[]; truncated?: boolean } | { field: string; kind: 'json'; patch: Json[]; truncated?: boolean }
      >
    }

/** The spans that turn `from` into `to`. */
export function textSpans(from: string, to: string): { spans: TextSpan[]; truncated: boolean } {
  let prefix = 0
  while (prefix < from.length && prefix < to.length && from.charCodeAt(prefix) === to.charCodeAt(prefix)) prefix++
  let suffix = 0
  while (suffix < from.length - prefix && suffix < to.length - prefix && from.charCodeAt(from.length - 1 - suffix) === to.charCodeAt(to.length - 1 - suffix))
    suffix++
  const oldMiddle = from.slice(prefix, from.length - suffix)
  const newMiddle = to.slice(prefix, to.length - suffix)
  const changes = oldMiddle.length === 0 || newMiddle.length === 0 ? undefined : diffWordsWithSpace(oldMiddle, newMiddle, { maxEditLength: MAX_EDIT_LENGTH })
  const parts = changes ?? [
    ...(oldMiddle.length > 0 ? [{ removed: true, added: false, value: oldMiddle }] : []),
    ...(newMiddle.length > 0 ? [{ added: true, removed: false, value: newMiddle }] : []),
  ]
  const spans: TextSpan[] = []
  let at = prefix
  let truncated = false
  for (const part of parts) {
    if (!part.added && !part.removed) {
      at += part.value.length
      continue
    }
    if (spans.length >= QUERY_LIMITS.maxItems) {
      truncated = true
      break
    }
    const text = part.value.length > MAX_SPAN_CHARS ? part.value.slice(0, MAX_SPAN_CHARS) : part.value
    spans.push({ op: part.added ? 'insert' : 'delete', at, text, ...(text.length < part.value.length ? { length: part.value.length } : {}) })
    if (part.added) at += part.value.length
  }
  return { spans, truncated }
}

function boundedPatch(from: Json, to: Json): { patch: Json[]; truncated: boolean } {
  const ops = compare(from as object, to as object) as unknown as Json[]
  let budget = QUERY_LIMITS.maxResultChars
  const patch: Json[] = []
  for (const op of ops) {
    const chars = JSON.stringify(op).length
    if (patch.length >= QUERY_LIMITS.maxItems || (chars > budget && patch.length > 0)) return { patch, truncated: true }
    patch.push(op)
    budget -= chars
  }
  return { patch, truncated: false }
}

function setChanges(from: Json[], to: Json[]): Changes {
  const before = new Set(from.map((v) => canonicalJson(v)))
  const after = new Set(to.map((v) => canonicalJson(v)))
  const added = to.filter((v) => !before.has(canonicalJson(v)))
  const removed = from.filter((v) => !after.has(canonicalJson(v)))
  const truncated = added.length + removed.length > QUERY_LIMITS.maxItems
  return {
    kind: 'set',
    added: added.slice(0, QUERY_LIMITS.maxItems),
    removed: removed.slice(0, Math.max(0, QUERY_LIMITS.maxItems - added.length)),
    ...(truncated ? { truncated } : {}),
  }
}

/** What changed from `from` to `to`, two states of one name of `type`. */
export function changesBetween(type: ReplicaType, from: Replica, to: Replica): Changes {
  switch (type) {
    case 'pncounter':
    case 'gcounter': {
      const a = from.value() as number
      const b = to.value() as number
      return { kind: 'counter', from: a, to: b, delta: b - a }
    }
    case 'orset':
    case 'gset':
      return setChanges(from.value() as Json[], to.value() as Json[])
    case 'lww-register':
    case 'mv-register':
    case 'ewflag':
      return { kind: 'value', from: toJson(from.value()), to: toJson(to.value()) }
    case 'ormap':
    case 'automerge': {
      const { patch, truncated } = boundedPatch(toJson(from.value()), toJson(to.value()))
      return { kind: 'json', patch, ...(truncated ? { truncated } : {}) }
    }
    case 'yjs': {
      const a = from as YjsReplica
      const b = to as YjsReplica
      const before = a.value() as Record<string, unknown>
      const after = b.value() as Record<string, unknown>
      const kinds = new Map([...documentFields(a.doc), ...documentFields(b.doc)].map((f) => [f.field, f.kind]))
      const fields: Extract<Changes, { kind: 'document' }>['fields'] = []
      for (const [field, kind] of [...kinds].sort(([x], [y]) => (x < y ? -1 : 1))) {
        const old = toJson(before[field] ?? (kind === 'text' ? '' : null))
        const now = toJson(after[field] ?? (kind === 'text' ? '' : null))
        if (canonicalJson(old) === canonicalJson(now)) continue
        if (kind === 'text' && typeof old === 'string' && typeof now === 'string') {
          const { spans, truncated } = textSpans(old, now)
          fields.push({ field, kind: 'text', spans, ...(truncated ? { truncated } : {}) })
        } else {
          const { patch, truncated } = boundedPatch({ value: old }, { value: now })
          fields.push({ field, kind: 'json', patch, ...(truncated ? { truncated } : {}) })
        }
      }
      return { kind: 'document', fields }
    }
  }
}

/** True when nothing changed. */
export function isUnchanged(changes: Changes): boolean {
  switch (changes.kind) {
    case 'counter':
      return changes.delta === 0
    case 'set':
      return changes.added.length === 0 && changes.removed.length === 0
    case 'value':
      return canonicalJson(changes.from) === canonicalJson(changes.to)
    case 'json':
      return changes.patch.length === 0
    case 'document':
      return changes.fields.length === 0
  }
}
