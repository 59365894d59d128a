/**
 * Automerge values as plain data, and `restore`: rewriting a document in one
 * change so that it equals a past version (text through `updateText`, a
 * diff; lists by their differing middle).
 */
import * as A from '@automerge/automerge/slim'

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Date) &&
    !(value instanceof Uint8Array) &&
    !A.isCounter(value) &&
    !A.isImmutableString(value)
  )
}

/** An Automerge value as plain data (see the module comment). */
export function plainValue(value: unknown): unknown {
  if (A.isCounter(value)) return (value as A.Counter).value
  if (A.isImmutableString(value)) return (value as A.ImmutableString).val
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Uint8Array) return new Uint8Array(value)
  if (Array.isArray(value)) return value.map(plainValue)
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) out[key] = plainValue((value as Record<string, unknown>)[key])
    return out
  }
  return value
}

/** A fresh copy of a value of a past document, ready to assign inside a change. */
export function insertable(value: unknown): unknown {
  if (A.isCounter(value)) return new A.Counter((value as A.Counter).value)
  if (A.isImmutableString(value)) return new A.ImmutableString((value as A.ImmutableString).val)
  if (value instanceof Date) return new Date(value.getTime())
  if (value instanceof Uint8Array) return new Uint8Array(value)
  if (Array.isArray(value)) return value.map(insertable)
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) out[key] = insertable((value as Record<string, unknown>)[key])
    return out
  }
  return value
}

function plainEqual(a: unknown, b: unknown): boolean {
  return deepEqual(plainValue(a), plainValue(b)) && A.isCounter(a) === A.isCounter(b) && A.isImmutableString(a) === A.isImmutableString(b)
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i])
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

/** Rewrites the object `target` (inside a change, at `path` of `root`) to equal `past`. */
export function restoreObject(root: unknown, path: A.Prop[], target: Record<string, unknown>, past: Record<string, unknown>): void {
  for (const key of Object.keys(target)) if (!Object.hasOwn(past, key)) delete target[key]
  for (const key of Object.keys(past)) restoreSlot(root, [...path, key], target, key, past[key])
}

/** Rewrites `container[key]` to equal `wanted`, in place where the kinds match. */
function restoreSlot(root: unknown, path: A.Prop[], container: Record<string | number, unknown>, key: string | number, wanted: unknown): void {
  const current = container[key]
  if (key in container && plainEqual(current, wanted)) return
  if (typeof current === 'string' && typeof wanted === 'string') {
    A.updateText(root as A.Doc<unknown>, path, wanted)
  } else if (A.isCounter(current) && A.isCounter(wanted)) {
    ;(current as A.Counter).increment((wanted as A.Counter).value - (current as A.Counter).value)
  } else if (Array.isArray(current) && Array.isArray(wanted)) {
    restoreList(root, path, current, wanted)
  } else if (isPlainObject(current) && isPlainObject(wanted)) {
    restoreObject(root, path, current, wanted)
  } else {
    container[key] = insertable(wanted)
  }
}

function restoreList(root: unknown, path: A.Prop[], current: unknown[], wanted: unknown[]): void {
  let start = 0
  while (start < current.length && start < wanted.length && plainEqual(current[start], wanted[start])) start++
  let endC = current.length
  let endW = wanted.length
  while (endC > start && endW > start && plainEqual(current[endC - 1], wanted[endW - 1])) {
    endC--
    endW--
  }
  // Same length in the middle: rewrite element by element (keeps nested objects and texts).
  if (endC - start === endW - start) {
    for (let i = start; i < endC; i++) restoreSlot(root, [...path, i], current as unknown as Record<number, unknown>, i, wanted[i])
    return
  }
  if (endC > start) A.deleteAt(current, start, endC - start)
  if (endW > start) A.insertAt(current, start, ...wanted.slice(start, endW).map(insertable))
}
