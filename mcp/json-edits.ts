/**
 * JSON edits of maps and Automerge documents: set and delete at a path,
 * and JSON Patch (RFC 6902, checked and applied with fast-json-patch on a
 * copy first, so that a patch is applied all or none).
 *
 * An observed-remove map holds nested CRDTs: a path goes down through
 * nested maps; where it meets a JSON field (an LWW register, what
 * `map.set` writes) the rest of the path is inside that JSON value, which
 * is rewritten whole (last writer wins for the field). A path through a
 * field of another type (a counter, a set) is refused: those have tools of
 * their own at the top level. An Automerge document is edited in one
 * change: lists with insertAt/deleteAt, a string replaced by a string with
 * updateText (so concurrent text edits merge), the rest by assignment.
 */
import * as A from '@automerge/automerge/slim'
import jsonpatch, { type Operation } from 'fast-json-patch'
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { AutomergeReplica } from '../crdt/documents/automerge-replica.ts'
import type { ORMapView } from '../crdt/types/index.ts'
import type { Json } from '../crdt/types/json.ts'
import { clip, invalid } from './errors.ts'
import { formatPointer, parsePointer } from './paging.ts'

const { applyPatch, deepClone, getValueByPointer, JsonPatchError } = jsonpatch

/** The error of a patch fast-json-patch refused, with a Concord code. */
function patchError(error: unknown): ConcordError {
  if (isConcordError(error)) return error
  if (error instanceof JsonPatchError) {
    const where =
      error.operation && typeof error.operation === 'object' ? ` (operation ${error.index ?? 0}: ${clip(JSON.stringify(error.operation), 160)})` : ''
    const first = error.message.split('\n')[0]
    if (error.name === 'TEST_OPERATION_FAILED') return new ConcordError(ErrorCodes.CONFLICT, `a "test" operation failed: the value differs${where}`)
    if (error.name === 'OPERATION_PATH_UNRESOLVABLE' || error.name === 'OPERATION_FROM_UNRESOLVABLE') {
      return new ConcordError(ErrorCodes.NOT_FOUND, `${first}${where}`)
    }
    return invalid(`${first}${where}`)
  }
  return invalid(`not a JSON Patch: ${clip(String((error as Error)?.message ?? error), 200)}`)
}

/**
 * Checks `patch` against `value` (applied to a copy) and returns the value
 * after it; `CONCORD_NOT_FOUND` for a path that does not exist,
 * `CONCORD_CONFLICT` for a failed `test`, `CONCORD_INVALID_ARGUMENT` else.
 */
export function checkPatch(value: Json, patch: readonly Operation[]): Json {
  try {
    // The operations are copied too: fast-json-patch puts an added value itself into the document, and a later operation would change it.
    return applyPatch(deepClone(value), deepClone(patch) as Operation[], true, true, true).newDocument as Json
  } catch (error) {
    throw patchError(error)
  }
}

/** A JSON value after one operation (on copies of both). */
function editJson(value: Json, operation: Operation): Json {
  try {
    return applyPatch(deepClone(value), [deepClone(operation) as Operation], true, true, true).newDocument as Json
  } catch (error) {
    throw patchError(error)
  }
}

/** What a map path leads to: a nested map and a key in it, or a JSON field and the path inside its value. */
type MapTarget =
  | { readonly kind: 'map'; readonly view: ORMapView; readonly key: string }
  | { readonly kind: 'json'; readonly view: ORMapView; readonly key: string; readonly inner: string[] }

/** Follows `tokens` through nested maps (creating them when `create`); see the module comment. */
function mapTarget(root: ORMapView, tokens: readonly string[], create: boolean, what: string): MapTarget {
  if (tokens.length === 0) throw invalid('a map edit needs a path of at least one key')
  let view = root
  for (let i = 0; i < tokens.length - 1; i++) {
    const key = tokens[i]
    const types = view.fieldTypes(key)
    if (types.includes('lww-register')) return { kind: 'json', view, key, inner: tokens.slice(i + 1) }
    if (types.includes('ormap') || (types.length === 0 && create)) {
      view = view.map(key)
      continue
    }
    if (types.length === 0) throw new ConcordError(ErrorCodes.NOT_FOUND, `path ${formatPointer(tokens.slice(0, i + 1))} does not exist in ${what}`)
    throw invalid(`${formatPointer(tokens.slice(0, i + 1))} of ${what} is a ${types[0]} field: it holds no keys`)
  }
  return { kind: 'map', view, key: tokens[tokens.length - 1] }
}

/** Sets the field at `tokens` of a map to `value` (nested maps created as needed). */
export function mapSet(root: ORMapView, tokens: readonly string[], value: Json, what: string): void {
  const target = mapTarget(root, tokens, true, what)
  if (target.kind === 'json') {
    const current = target.view.get(target.key) ?? null
    const pointer = formatPointer(target.inner)
    const exists = (() => {
      try {
        return getValueByPointer(current, pointer) !== undefined
      } catch {
        return false
      }
    })()
    target.view.set(target.key, editJson(current, { op: exists ? 'replace' : 'add', path: pointer, value }))
    return
  }
  replaceField(target.view, target.key, tokens, value, what)
}

/** Sets a map key to a JSON value: over a JSON field or a nested map (replaced); a field of another type is refused. */
function replaceField(view: ORMapView, key: string, tokens: readonly string[], value: Json, what: string): void {
  const types = view.fieldTypes(key)
  if (types.length > 0 && !types.includes('lww-register') && !types.includes('ormap')) {
    throw invalid(`${formatPointer(tokens)} of ${what} is a ${types[0]} field, not JSON: map_delete it first to replace it`)
  }
  if (types.includes('ormap') && !types.includes('lww-register')) view.delete(key)
  view.set(key, value)
}

/** Deletes the field at `tokens` of a map; `CONCORD_NOT_FOUND` when there is none. */
export function mapDelete(root: ORMapView, tokens: readonly string[], what: string): void {
  const target = mapTarget(root, tokens, false, what)
  if (target.kind === 'json') {
    const current = target.view.get(target.key) ?? null
    target.view.set(target.key, editJson(current, { op: 'remove', path: formatPointer(target.inner) }))
    return
  }
  if (!target.view.has(target.key)) throw new ConcordError(ErrorCodes.NOT_FOUND, `path ${formatPointer(tokens)} does not exist in ${what}`)
  target.view.delete(target.key)
}

/** The value at a pointer of `value`, as plain JSON (checked by {@link checkPatch} before). */
function valueAt(value: Json, pointer: string): Json {
  return deepClone(getValueByPointer(value, pointer)) as Json
}

/** Applies a checked JSON Patch to a map, operation by operation (inside the caller's transaction). */
export function patchMap(root: ORMapView, patch: readonly Operation[], what: string): void {
  for (const operation of patch) {
    const current = root.toJSON()
    switch (operation.op) {
      case 'test':
        continue
      case 'add':
      case 'replace':
        setAt(root, parsePointer(operation.path), operation.op, operation.value as Json, what)
        continue
      case 'remove':
        mapDelete(root, parsePointer(operation.path), what)
        continue
      case 'copy':
      case 'move': {
        const moved = valueAt(current, operation.from)
        if (operation.op === 'move') mapDelete(root, parsePointer(operation.from), what)
        setAt(root, parsePointer(operation.path), 'add', moved, what)
        continue
      }
    }
  }
}

/** add/replace at a map path: a whole field, or inside a JSON field with the operation's own array semantics. */
function setAt(root: ORMapView, tokens: readonly string[], op: 'add' | 'replace', value: Json, what: string): void {
  if (tokens.length === 0) throw invalid(`a patch of the map ${what} cannot replace the whole map: patch its keys`)
  const target = mapTarget(root, tokens, op === 'add', what)
  if (target.kind === 'json') {
    const current = target.view.get(target.key) ?? null
    target.view.set(target.key, editJson(current, { op, path: formatPointer(target.inner), value }))
    return
  }
  replaceField(target.view, target.key, tokens, value, what)
}

type Container = Record<string | number, unknown>

/** The container at `tokens` of an Automerge document inside a change (checked to exist). */
function containerAt(doc: unknown, tokens: readonly string[]): Container {
  let current = doc as Container
  for (const token of tokens) current = current[Array.isArray(current) ? Number(token) : token] as Container
  return current
}

/**
 * Applies a checked JSON Patch to an Automerge document as one change
 * (with `message`), all or none; `start` is the document's plain value.
 */
export function patchAutomerge(replica: AutomergeReplica, patch: readonly Operation[], start: Json, message: string | undefined): void {
  replica.change((doc) => {
    let plain = deepClone(start) as Json
    for (const operation of patch) {
      if (operation.op === 'test' || operation.op === '_get') continue
      if (operation.op === 'copy' || operation.op === 'move') {
        const moved = valueAt(plain, operation.from)
        if (operation.op === 'move') removeAt(doc, parsePointer(operation.from))
        addAt(doc, parsePointer(operation.path), moved, 'add')
      } else if (operation.op === 'remove') {
        removeAt(doc, parsePointer(operation.path))
      } else {
        addAt(doc, parsePointer(operation.path), operation.value as Json, operation.op)
      }
      plain = editJson(plain, operation)
    }
  }, message)
}

/** The Automerge path (list indices as numbers) of `tokens` in `doc`. */
function propsOf(doc: unknown, tokens: readonly string[]): A.Prop[] {
  const props: A.Prop[] = []
  let current = doc as Container
  for (const token of tokens) {
    const prop = Array.isArray(current) ? Number(token) : token
    props.push(prop)
    current = current?.[prop] as Container
  }
  return props
}

function removeAt(doc: unknown, tokens: readonly string[]): void {
  if (tokens.length === 0) throw invalid('a patch cannot remove the whole document')
  const parent = containerAt(doc, tokens.slice(0, -1))
  const key = tokens[tokens.length - 1]
  if (Array.isArray(parent)) A.deleteAt(parent, Number(key), 1)
  else delete parent[key]
}

function addAt(doc: unknown, tokens: readonly string[], value: Json, op: 'add' | 'replace'): void {
  if (tokens.length === 0) {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw invalid('an Automerge document is an object: the whole document can only be replaced by an object')
    const root = doc as Container
    for (const key of Object.keys(root)) if (!Object.hasOwn(value, key)) delete root[key]
    for (const [key, item] of Object.entries(value)) assign(doc, [key], root, key, item)
    return
  }
  const parent = containerAt(doc, tokens.slice(0, -1))
  const key = tokens[tokens.length - 1]
  if (Array.isArray(parent)) {
    const index = key === '-' ? parent.length : Number(key)
    if (op === 'add') A.insertAt(parent, index, value)
    else assign(doc, tokens, parent as unknown as Container, index, value)
    return
  }
  assign(doc, tokens, parent, key, value)
}

/** `container[key] = value`, as a text edit when both are strings (concurrent edits of the text merge). */
function assign(doc: unknown, tokens: readonly string[], container: Container, key: string | number, value: Json): void {
  if (typeof container[key] === 'string' && typeof value === 'string') {
    A.updateText(doc as A.Doc<unknown>, propsOf(doc, tokens), value)
    return
  }
  container[key] = value
}
