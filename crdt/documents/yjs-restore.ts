/**
 * Rewrites a Y.Doc so its value equals another doc's (used by `restore`):
 * a forward change, made of ordinary Yjs operations, that touches only what
 * differs. Text: one splice over the differing middle (common prefix and
 * suffix kept); formatted text or embeds are replaced as a whole delta.
 * Maps: keys set or deleted where the values differ, nested types of the same
 * class rewritten in place. Arrays: the differing middle replaced.
 * Must run inside a transaction of `doc`.
 */
import * as Y from 'yjs'
import { simpleDiffString } from 'lib0/diff'
import { ConcordError, ErrorCodes, withArticle } from '../errors.ts'
import { kindOf, openTopLevel, type AnyType } from './yjs-view.ts'

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    if (!(a instanceof Uint8Array && b instanceof Uint8Array) || a.length !== b.length) return false
    return a.every((byte, i) => byte === b[i])
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => jsonEqual(v, (b as unknown[])[i]))
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

function toJson(value: unknown): unknown {
  return value instanceof Y.AbstractType ? value.toJSON() : value
}

/** A value of `past` ready to insert into another doc: Yjs types are cloned, data copied as is. */
function insertable(value: unknown): unknown {
  return value instanceof Y.AbstractType ? value.clone() : value
}

function isPlainText(text: Y.Text): boolean {
  const delta = text.toDelta() as Array<{ insert: unknown; attributes?: object }>
  return delta.every((op) => typeof op.insert === 'string' && op.attributes === undefined)
}

function restoreText(current: Y.Text, past: Y.Text): void {
  if (isPlainText(current) && isPlainText(past)) {
    const { index, remove, insert } = simpleDiffString(current.toString(), past.toString())
    if (remove > 0) current.delete(index, remove)
    if (insert.length > 0) current.insert(index, insert)
    return
  }
  const same = jsonEqual(current.toDelta(), past.toDelta())
  if (same) return
  if (current.length > 0) current.delete(0, current.length)
  current.applyDelta(past.toDelta())
}

function restoreMap(current: Y.Map<unknown>, past: Y.Map<unknown>): void {
  for (const key of [...current.keys()]) if (!past.has(key)) current.delete(key)
  for (const [key, value] of past.entries()) {
    const mine = current.get(key)
    if (current.has(key) && restoreNested(mine, value)) continue
    current.set(key, insertable(value))
  }
}

/** Restores `mine` in place when both are the same kind of nested type or equal data; false when it must be replaced. */
function restoreNested(mine: unknown, past: unknown): boolean {
  if (mine instanceof Y.AbstractType || past instanceof Y.AbstractType) {
    if (!(mine instanceof Y.AbstractType && past instanceof Y.AbstractType) || mine.constructor !== past.constructor) return false
    if (mine instanceof Y.Map) restoreMap(mine, past as Y.Map<unknown>)
    else if (mine instanceof Y.Array) restoreArray(mine, past as Y.Array<unknown>)
    else if (mine instanceof Y.Text) restoreText(mine, past as Y.Text)
    else if (mine.toString() !== past.toString()) return false // XML: replace when it differs
    return true
  }
  return jsonEqual(mine, past)
}

function restoreArray(current: Y.Array<unknown>, past: Y.Array<unknown>): void {
  const a = current.toArray()
  const b = past.toArray()
  let start = 0
  while (start < a.length && start < b.length && jsonEqual(toJson(a[start]), toJson(b[start]))) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && jsonEqual(toJson(a[endA - 1]), toJson(b[endB - 1]))) {
    endA--
    endB--
  }
  if (endA > start) current.delete(start, endA - start)
  if (endB > start) current.insert(start, b.slice(start, endB).map(insertable))
}

function restoreXml(current: Y.XmlFragment, past: Y.XmlFragment): void {
  if (current.toString() === past.toString()) return
  if (current.length > 0) current.delete(0, current.length)
  current.insert(0, past.toArray().map((node) => node.clone()) as Array<Y.XmlElement | Y.XmlText>)
}

function clear(type: AnyType): void {
  if (type instanceof Y.Map) for (const key of [...type.keys()]) type.delete(key)
  else if (type instanceof Y.Text || type instanceof Y.Array || type instanceof Y.XmlFragment) {
    if (type.length > 0) type.delete(0, type.length)
  }
}

/**
 * Rewrites every top-level type of `doc` to its value in `past`. Bare types
 * are opened with their inferred class (in both docs). Throws a
 * ConcordError (`CONCORD_INVALID_ARGUMENT`) when a name has different kinds
 * in the two docs.
 */
export function restoreDocument(doc: Y.Doc, past: Y.Doc): void {
  const names = [...new Set([...doc.share.keys(), ...past.share.keys()])].sort()
  // First every check, then every write: a refused restore changes nothing.
  const plan = names.map((name) => {
    const mineRaw = doc.share.get(name)
    const pastRaw = past.share.get(name)
    const mineKind = mineRaw ? kindOf(mineRaw) : 'empty'
    const pastKind = pastRaw ? kindOf(pastRaw) : 'empty'
    if (pastKind !== 'empty' && mineKind !== 'empty' && mineKind !== pastKind) {
      throw new ConcordError(
        ErrorCodes.INVALID_ARGUMENT,
        `yjs restore: "${name}" is ${withArticle(mineKind)} here and ${withArticle(pastKind)} in the past version`,
      )
    }
    return { name, mineKind, pastKind }
  })
  for (const { name, mineKind, pastKind } of plan) {
    if (pastKind === 'empty') {
      if (mineKind !== 'empty') clear(openTopLevel(doc, name, mineKind))
      continue
    }
    const mine = openTopLevel(doc, name, pastKind)
    const then = openTopLevel(past, name, pastKind)
    if (mine instanceof Y.XmlFragment) restoreXml(mine, then as Y.XmlFragment)
    else if (mine instanceof Y.Text) restoreText(mine, then as Y.Text)
    else if (mine instanceof Y.Map) restoreMap(mine, then as Y.Map<unknown>)
    else if (mine instanceof Y.Array) restoreArray(mine, then as Y.Array<unknown>)
  }
}
