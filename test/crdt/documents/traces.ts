/**
 * Loads the real editing traces in test/data/editing-traces/ (see its
 * README and LICENSE.md: Joseph Gentle's josephg/editing-traces, CC BY 4.0)
 * and replays them through any text editor abstraction.
 */
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { concatBytes } from '../../helpers/bytes.ts'

export { concatBytes }

/** `[position in code points, deleteCount, insertText]`. */
export type Patch = [number, number, string]

/** A sequential trace. */
export interface SequentialTrace {
  readonly endContent: string
  readonly txns: ReadonlyArray<{ readonly patches: readonly Patch[] }>
}

/** The concurrent trace: every transaction names the transactions it was typed after. */
export interface ConcurrentTrace {
  readonly kind: 'concurrent'
  readonly endContent: string
  readonly numAgents: number
  readonly txns: ReadonlyArray<{ readonly parents: readonly number[]; readonly agent: number; readonly patches: readonly Patch[] }>
}

const TRACE_DIR = fileURLToPath(new URL('../../data/editing-traces/', import.meta.url))

/** Reads and parses one trace file by name (without `.json.gz`). */
export function loadTrace<T = SequentialTrace>(name: string): T {
  return JSON.parse(gunzipSync(readFileSync(`${TRACE_DIR}${name}.json.gz`)).toString('utf8')) as T
}

/** The sequential traces. */
export const SEQUENTIAL_TRACES = ['automerge-paper', 'seph-blog1', 'sveltecomponent', 'rustcode'] as const

/**
 * Converts a position in code points to UTF-16 code units in `text`. The
 * traces count code points; Yjs and JS strings count UTF-16 units. `astral`
 * says whether `text` may hold characters outside the BMP (if not, the
 * position is the same).
 */
export function utf16Position(text: string, codePoints: number, astral: boolean): number {
  if (!astral) return codePoints
  let units = 0
  for (let i = 0; i < codePoints && units < text.length; i++) units += text.codePointAt(units)! > 0xffff ? 2 : 1
  return units
}

/** Length in UTF-16 units of `count` code points from `at` in `text`. */
export function utf16Span(text: string, at: number, count: number, astral: boolean): number {
  if (!astral) return count
  let units = at
  for (let i = 0; i < count && units < text.length; i++) units += text.codePointAt(units)! > 0xffff ? 2 : 1
  return units - at
}

/** True when `text` holds a character outside the BMP. */
export function hasAstral(text: string): boolean {
  return /[\uD800-\uDFFF]/.test(text)
}

/**
 * Replays the concurrent trace: one editor per agent, each transaction typed
 * on the agent's editor after merging in every ancestor it lacks.
 * `apply(agent, txns)` merges the recorded deltas of those transactions (in
 * index order, one batch per edit, as a sync round would) into the agent's
 * editor; `edit(agent, txn)` types the transaction and records its delta.
 * Check the editors' texts afterwards.
 */
export function replayConcurrent(trace: ConcurrentTrace, apply: (agent: number, txns: number[]) => void, edit: (agent: number, txn: number) => void): void {
  const applied = Array.from({ length: trace.numAgents }, () => new Set<number>())
  for (let i = 0; i < trace.txns.length; i++) {
    const { agent, parents } = trace.txns[i]
    const have = applied[agent]
    const missing: number[] = []
    const stack = [...parents]
    const seen = new Set<number>()
    while (stack.length > 0) {
      const t = stack.pop()!
      if (have.has(t) || seen.has(t)) continue
      seen.add(t)
      missing.push(t)
      stack.push(...trace.txns[t].parents)
    }
    missing.sort((a, b) => a - b)
    if (missing.length > 0) apply(agent, missing)
    for (const t of missing) have.add(t)
    edit(agent, i)
    have.add(i)
  }
}
