/**
 * The plain-JSON view of a Y.Doc's top-level types, and how their kinds are
 * known.
 *
 * A Y.Doc does not record the class of a top-level type: `doc.getText('t')`
 * decides it locally, and a type that only arrived through remote updates is
 * a bare `AbstractType` (which `doc.toJSON()` shows as `undefined`). The
 * kind of each top-level type is therefore, in order:
 * 1. its class, when it was declared (`YjsReplicaOptions.types`) or opened
 *    locally (`doc.getText` / `getMap` / `getArray` / `getXmlFragment`);
 * 2. otherwise inferred from its content, without converting it (so the
 *    application may still open it with any class later): visible string
 *    or embed content makes it text, visible XML nodes an XML fragment,
 *    other visible sequence content an array, visible keyed entries only a
 *    map. Ambiguous cases (an array whose first element is an XML node, a
 *    text with attributes but no characters) read wrong: declare them.
 * Empty top-level types (no visible content) are left out of the view, so a
 * replica that opened a type and one that never heard of it agree.
 */
import * as Y from 'yjs'
import type { YjsTopLevelKind } from './options.ts'

/** Any Yjs shared type. */
// biome-ignore lint/suspicious/noExplicitAny: Yjs types its shared types over any
export type AnyType = Y.AbstractType<any>

/** The kind of a top-level type as far as can be known; `empty` when inference finds no visible content. */
export type ObservedKind = YjsTopLevelKind | 'empty'

/** The kind a Yjs class stands for, or undefined for a bare (undeclared) type. */
export function kindOfClass(type: AnyType): YjsTopLevelKind | undefined {
  if (type instanceof Y.XmlFragment) return 'xml'
  if (type instanceof Y.Text) return 'text'
  if (type instanceof Y.Map) return 'map'
  if (type instanceof Y.Array) return 'array'
  return undefined
}

/** Infers the kind of a bare top-level type from its visible content. */
export function inferKind(type: AnyType): ObservedKind {
  for (let item = type._start; item !== null; item = item.right) {
    if (item.deleted || !item.countable) continue
    const content = item.content
    if (content instanceof Y.ContentString || content instanceof Y.ContentEmbed) return 'text'
    if (content instanceof Y.ContentType && isXmlNode(content.type)) return 'xml'
    return 'array'
  }
  for (const item of type._map.values()) if (!item.deleted) return 'map'
  return 'empty'
}

function isXmlNode(type: AnyType): boolean {
  return type instanceof Y.XmlElement || type instanceof Y.XmlText || type instanceof Y.XmlHook
}

/** The kind of a top-level type: its class, else inferred. */
export function kindOf(type: AnyType): ObservedKind {
  return kindOfClass(type) ?? inferKind(type)
}

function jsonOfValue(value: unknown): unknown {
  return value instanceof Y.AbstractType ? value.toJSON() : value
}

/** The JSON view of a bare top-level type read as `kind` (mirrors the Yjs classes' toJSON). */
function jsonOfBare(type: AnyType, kind: ObservedKind): unknown {
  switch (kind) {
    case 'text': {
      let text = ''
      for (let item = type._start; item !== null; item = item.right) {
        if (!item.deleted && item.content instanceof Y.ContentString) text += item.content.str
      }
      return text
    }
    case 'array': {
      const out: unknown[] = []
      for (let item = type._start; item !== null; item = item.right) {
        if (item.deleted || !item.countable) continue
        for (const value of item.content.getContent()) out.push(jsonOfValue(value))
      }
      return out
    }
    case 'map': {
      const out: Record<string, unknown> = {}
      for (const [key, item] of type._map) {
        if (!item.deleted) out[key] = jsonOfValue(item.content.getContent()[item.length - 1])
      }
      return out
    }
    case 'xml': {
      let xml = ''
      for (let item = type._start; item !== null; item = item.right) {
        if (!item.deleted && item.content instanceof Y.ContentType) xml += item.content.type.toString()
      }
      return xml
    }
    default:
      return undefined
  }
}

/** The JSON view of one top-level type, or undefined when it is empty. */
export function jsonOfTopLevel(type: AnyType): unknown {
  const kind = kindOfClass(type)
  const json = kind === undefined ? jsonOfBare(type, inferKind(type)) : kind === 'xml' ? type.toString() : type.toJSON()
  return isEmptyJson(json) ? undefined : json
}

function isEmptyJson(json: unknown): boolean {
  if (json === undefined || json === '') return true
  if (Array.isArray(json)) return json.length === 0
  if (typeof json === 'object' && json !== null) return Object.keys(json).length === 0
  return false
}

/** The same data with every object's keys in sorted order (Yjs maps list keys in arrival order). */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key])
  return out
}

/** `{ name: json }` for every non-empty top-level type; object keys sorted at every level. */
export function documentValue(doc: Y.Doc): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of [...doc.share.keys()].sort()) {
    const json = jsonOfTopLevel(doc.share.get(name)!)
    if (json !== undefined) out[name] = sortKeys(json)
  }
  return out
}

/** Opens (and if bare, converts) the top-level type `name` with the class of `kind`. */
export function openTopLevel(doc: Y.Doc, name: string, kind: YjsTopLevelKind): AnyType {
  switch (kind) {
    case 'text':
      return doc.getText(name)
    case 'map':
      return doc.getMap(name)
    case 'array':
      return doc.getArray(name)
    case 'xml':
      return doc.getXmlFragment(name)
  }
}
