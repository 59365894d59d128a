/**
 * Who wrote what is there now: the log's records (oldest considered first,
 * at most `limit` of the newest retained ones) are replayed from the state
 * before them (`at`), and each record's author is given what it changed.
 *
 * - Yjs texts: exact. Each record's update is decoded (`Y.decodeUpdate`)
 *   and the ids of the items it carries are given to its record; every
 *   character of the text now is the item it belongs to, so a span is
 *   blamed on the record that inserted it, wherever it moved since.
 * - JSON kinds (maps, Automerge documents, registers, flags, other Yjs
 *   fields): each leaf path is blamed on the last record whose change (the
 *   JSON Patch between the values before and after it) set it.
 * - Counters: each agent's contribution (the sum of its records' deltas).
 * - Sets: each element on the record that added it.
 *
 * Content older than the records considered (deleted by a retention
 * policy, or beyond `limit`) is reported as such (`agent: null, before:
 * seq`). The agent of a record is the change's author (relayed changes
 * keep theirs, sync/provenance.ts), with its `message` when it has one.
 */
import * as Y from 'yjs'
import jsonpatch from 'fast-json-patch'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { canonicalJson, type Json } from '../../crdt/types/json.ts'
import type { HistoryEntry } from '../store-types.ts'
import { chooseTextField, documentFields, formatPointer, QUERY_LIMITS, toJson } from './json-values.ts'

const { compare } = jsonpatch

/** Who, when and why of a record. */
export interface Author {
  readonly agent: string
  readonly seq: number
  /** ISO time the change was made (its author's HLC wall time). */
  readonly at: string
  /** Why, when the change said. */
  readonly message?: string
}

/** What blame reads of a store: its records and past states. */
export interface BlameSource {
  history(name: string, options: { from?: number; limit?: number; reverse?: boolean }): Promise<HistoryEntry[]>
  at(name: string, seq: number): Promise<Replica>
}

/** Content older than the records considered. */
export interface Before {
  readonly agent: null
  /** Everything up to this seq (exclusive) was not replayed. */
  readonly before: number
}

/** A blame, by kind. */
export type Blame =
  | {
      readonly kind: 'text'
      readonly field: string
      readonly length: number
      readonly spans: Array<{ index: number; length: number; text: string } & (Author | Before)>
      readonly truncated?: boolean
    }
  | { readonly kind: 'paths'; readonly paths: Array<{ path: string } & (Author | Before)>; readonly truncated?: boolean }
  | {
      readonly kind: 'counter'
      readonly value: number
      readonly before: number
      readonly contributions: Array<{ agent: string; amount: number; records: number }>
    }
  | { readonly kind: 'set'; readonly elements: Array<{ element: Json } & (Author | Before)>; readonly truncated?: boolean }

/** A blame with the records it is computed from. */
export interface BlameReport {
  readonly name: string
  readonly type: ReplicaType
  /** The records replayed: seqs `from..to` (`from` > 1: older content is `before`). */
  readonly from: number
  readonly to: number
  readonly blame: Blame
}

const PREVIEW_CHARS = 120

function authorOf(record: HistoryEntry): Author {
  return {
    agent: record.agent,
    seq: record.seq,
    at: new Date((record.authored ?? record.hlc).wall).toISOString(),
    ...(record.message !== undefined ? { message: record.message } : {}),
  }
}

/** The newest `limit` retained records of `name` and the state before them. */
async function window(store: BlameSource, name: string, limit: number): Promise<{ base: Replica; records: HistoryEntry[]; from: number; to: number }> {
  const [newest] = await store.history(name, { reverse: true, limit: 1 })
  const [oldest] = await store.history(name, { limit: 1 })
  if (!newest || !oldest) return { base: await store.at(name, 0), records: [], from: 1, to: 0 }
  const from = Math.max(oldest.seq, newest.seq - limit + 1)
  const base = await store.at(name, from - 1)
  const records: HistoryEntry[] = []
  while (records.length === 0 || records[records.length - 1].seq < newest.seq) {
    const page = await store.history(name, { from: (records.at(-1)?.seq ?? from - 1) + 1, limit: 500 })
    if (page.length === 0) break
    for (const record of page) if (record.seq <= newest.seq) records.push(record)
  }
  return { base, records, from, to: newest.seq }
}

/**
 * Blames the content of `name` (see the module comment); `live` is its
 * current replica, which says what a Yjs document's fields are: a text
 * (the only one, or `field`) is blamed by character, another field by path.
 */
export async function blame(store: BlameSource, name: string, live: Replica, options: { field?: string; limit?: number } = {}): Promise<BlameReport> {
  const type = live.type
  const limit = Math.min(options.limit ?? 500, QUERY_LIMITS.maxBlameRecords)
  const { base, records, from, to } = await window(store, name, limit)
  const before: Before = { agent: null, before: from }
  let result: Blame
  if (type === 'yjs') {
    const doc = (live as YjsReplica).doc
    const requested = options.field === undefined ? undefined : documentFields(doc).find((f) => f.field === options.field)
    if (requested !== undefined && requested.kind !== 'text') {
      const prefix = formatPointer([options.field!])
      const all = blamePaths(base, records, before)
      result = {
        kind: 'paths',
        paths: all.paths.filter((p) => p.path === prefix || p.path.startsWith(`${prefix}/`)),
        ...(all.truncated ? { truncated: true } : {}),
      }
    } else {
      result = blameText(base as YjsReplica, chooseTextField(doc, options.field), records, before)
    }
  } else if (type === 'pncounter' || type === 'gcounter') {
    result = blameCounter(base, records)
  } else if (type === 'orset' || type === 'gset') {
    result = blameSet(base, records, before)
  } else {
    result = blamePaths(base, records, before)
  }
  return { name, type, from, to, blame: result }
}

function blameText(replica: YjsReplica, field: string, records: readonly HistoryEntry[], before: Before): Blame {
  // Item ids of each record's update, per client, in order of clock.
  const runs = new Map<number, Array<{ clock: number; end: number; author: Author }>>()
  for (const record of records) {
    replica.applyDelta(record.delta)
    let decoded: ReturnType<typeof Y.decodeUpdate>
    try {
      decoded = Y.decodeUpdate(record.delta)
    } catch {
      continue
    }
    const author = authorOf(record)
    for (const struct of decoded.structs) {
      if (!(struct instanceof Y.Item)) continue
      let list = runs.get(struct.id.client)
      if (!list) runs.set(struct.id.client, (list = []))
      list.push({ clock: struct.id.clock, end: struct.id.clock + struct.length, author })
    }
  }
  for (const list of runs.values()) list.sort((a, b) => a.clock - b.clock)
  const authorAt = (client: number, clock: number): { author: Author | undefined; until: number } => {
    const list = runs.get(client)
    if (!list) return { author: undefined, until: Infinity }
    let lo = 0
    let hi = list.length - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (list[mid].clock <= clock) {
        found = mid
        lo = mid + 1
      } else hi = mid - 1
    }
    if (found >= 0 && clock < list[found].end) return { author: list[found].author, until: list[found].end }
    return { author: undefined, until: found + 1 < list.length ? list[found + 1].clock : Infinity }
  }
  const text = replica.doc.getText(field)
  const content = text.toString()
  const spans: Array<{ index: number; length: number; text: string } & (Author | Before)> = []
  let index = 0
  let truncated = false
  for (let item = text._start; item !== null; item = item.right) {
    if (item.deleted || !item.countable) continue
    let clock = item.id.clock
    const end = item.id.clock + item.length
    while (clock < end) {
      const { author, until } = authorAt(item.id.client, clock)
      const length = Math.min(end, until) - clock
      const who: Author | Before = author ?? before
      const last = spans.at(-1)
      if (last && last.index + last.length === index && sameAuthor(last, who)) last.length += length
      else spans.push({ index, length, text: '', ...who })
      index += length
      clock += length
    }
  }
  if (spans.length > QUERY_LIMITS.maxItems) {
    spans.length = QUERY_LIMITS.maxItems
    truncated = true
  }
  for (const span of spans) span.text = content.slice(span.index, span.index + Math.min(span.length, PREVIEW_CHARS))
  return { kind: 'text', field, length: content.length, spans, ...(truncated ? { truncated } : {}) }
}

function sameAuthor(a: Author | Before, b: Author | Before): boolean {
  return a.agent === null || b.agent === null ? a.agent === b.agent : (a as Author).seq === (b as Author).seq
}

function blameCounter(replica: Replica, records: readonly HistoryEntry[]): Blame {
  const start = replica.value() as number
  const byAgent = new Map<string, { amount: number; records: number }>()
  let previous = start
  for (const record of records) {
    replica.applyDelta(record.delta)
    const now = replica.value() as number
    const entry = byAgent.get(record.agent) ?? { amount: 0, records: 0 }
    entry.amount += now - previous
    entry.records++
    byAgent.set(record.agent, entry)
    previous = now
  }
  const contributions = [...byAgent].map(([agent, c]) => ({ agent, ...c })).sort((a, b) => b.amount - a.amount || (a.agent < b.agent ? -1 : 1))
  return { kind: 'counter', value: previous, before: start, contributions }
}

function blameSet(replica: Replica, records: readonly HistoryEntry[], before: Before): Blame {
  const owners = new Map<string, Author | Before>()
  for (const element of replica.value() as Json[]) owners.set(canonicalJson(element), before)
  for (const record of records) {
    const previous = new Set((replica.value() as Json[]).map((v) => canonicalJson(v)))
    replica.applyDelta(record.delta)
    const now = new Set((replica.value() as Json[]).map((v) => canonicalJson(v)))
    for (const key of now) if (!previous.has(key)) owners.set(key, authorOf(record))
    for (const key of previous) if (!now.has(key)) owners.delete(key)
  }
  const elements = [...owners].map(([key, who]) => ({ element: JSON.parse(key) as Json, ...who }))
  const truncated = elements.length > QUERY_LIMITS.maxItems
  return { kind: 'set', elements: elements.slice(0, QUERY_LIMITS.maxItems), ...(truncated ? { truncated } : {}) }
}

function blamePaths(replica: Replica, records: readonly HistoryEntry[], before: Before): Extract<Blame, { kind: 'paths' }> {
  const owners = new Map<string, Author | Before>()
  const wrap = (value: unknown): Json => ({ value: toJson(value) })
  let previous = wrap(replica.value())
  if (before.before > 1) owners.set('', before)
  for (const record of records) {
    replica.applyDelta(record.delta)
    const now = wrap(replica.value())
    for (const op of compare(previous as object, now as object)) {
      const path = op.path.replace(/^\/value/, '')
      for (const key of [...owners.keys()]) if (key === path || key.startsWith(`${path}/`)) owners.delete(key)
      if (op.op !== 'remove') owners.set(path, authorOf(record))
    }
    previous = now
  }
  const paths = [...owners].map(([path, who]) => ({ path, ...who })).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const truncated = paths.length > QUERY_LIMITS.maxItems
  return { kind: 'paths', paths: paths.slice(0, QUERY_LIMITS.maxItems), ...(truncated ? { truncated } : {}) }
}
