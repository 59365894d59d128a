/**
 * Name filters: which names a peer asks to sync (all, a set of names, or
 * names under prefixes), and the validation rules for names on the wire.
 */
import { isWellFormed } from '../crdt/codec.ts'

/** The names a peer wants: every name, or the union of `names` and `prefixes`. */
export interface NameFilter {
  /** Exact names. */
  readonly names?: readonly string[]
  /** Name prefixes (`'tasks/'` matches `'tasks/1'`). */
  readonly prefixes?: readonly string[]
}

/** The filter that matches every name. */
export const ALL_NAMES: NameFilter = Object.freeze({})

/** Longest name accepted on the wire, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1024

/** True when the filter matches every name (neither list given). */
export function isAllNames(filter: NameFilter): boolean {
  return filter.names === undefined && filter.prefixes === undefined
}

/** True when two filters select the same names by the same rules (every name; or the same names and prefixes, in any order). */
export function sameFilter(a: NameFilter, b: NameFilter): boolean {
  if (isAllNames(a) || isAllNames(b)) return isAllNames(a) && isAllNames(b)
  const same = (x: readonly string[] = [], y: readonly string[] = []): boolean => {
    const left = new Set(x)
    const right = new Set(y)
    return left.size === right.size && [...left].every((item) => right.has(item))
  }
  return same(a.names, b.names) && same(a.prefixes, b.prefixes)
}

/** True when `name` is selected by `filter`. */
export function matchesFilter(filter: NameFilter, name: string): boolean {
  if (isAllNames(filter)) return true
  if (filter.names?.includes(name)) return true
  return filter.prefixes?.some((prefix) => name.startsWith(prefix)) ?? false
}

/**
 * True when `name` is a usable name: a non-empty, well-formed (no lone
 * surrogate) string of at most {@link MAX_NAME_LENGTH} characters.
 */
export function isValidName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= MAX_NAME_LENGTH && isWellFormed(name)
}
