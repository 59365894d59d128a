/**
 * Selective revert: undo one agent's changes since a time, as a new local
 * change (logged and replicated like any other), where the type allows it:
 *
 * - Yjs documents: every character of a text that the agent's records
 *   inserted and that is still there is deleted (exactly: by the ids of the
 *   items its updates carry, wherever they moved). Text the agent deleted is
 *   not brought back, and fields that are not texts are left alone.
 * - PN-counters: the agent's net contribution is taken back (a grow-only
 *   counter cannot go down: `CONCORD_INVALID_ARGUMENT` if it had one).
 * - OR-sets: elements the agent added and still there are removed; elements
 *   it removed and still absent are added back (a grow-only set cannot
 *   remove: refused when it would have to).
 * - Registers, flags and OR-maps (top-level keys): a value (a key) whose last
 *   change was the agent's goes back to what it was before the agent's first
 *   change since the time; one changed since by someone else is left alone.
 * - Automerge documents: refused (`CONCORD_INVALID_ARGUMENT`; use `revert`
 *   to a seq).
 */
import * as Y from 'yjs'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { EncodedProvenance } from '../../crdt/provenance.ts'
import type { Replica } from '../../crdt/replica.ts'
import { canonicalJson, type Json } from '../../crdt/types/json.ts'
import type { EWFlagReplica, GSetReplica, LWWRegisterReplica, MVRegisterReplica, ORMapReplica, ORSetReplica, PNCounterReplica } from '../../crdt/types/index.ts'
import type { StoreContext } from '../context.ts'
import { decodeRecord, type StoredRecord } from '../format/record.ts'
import { logEntries } from '../lifecycle/log-archive.ts'
import type { Names } from '../names/owner.ts'
import type { SignalOptions } from '../storage/storage.ts'
import type { Writes } from '../writes/writes.ts'
import { documentFields, toJson } from './json-values.ts'
import type { TimeTravel } from './time-travel.ts'

/** Whose changes to undo. */
export interface RevertSelection {
  /** The author whose changes are undone. */
  readonly agent: string
  /** Only its changes at or after this wall time (ms; default: all of them). */
  readonly since?: number | undefined
}

/** What {@link revertAgent} did. */
export interface SelectiveRevertReport {
  readonly name: string
  /** The agent's records considered (at or after `since`). */
  readonly records: number
  /** The seq of the new record, or null when there was nothing left to undo. */
  readonly seq: number | null
}

function invalid(message: string): ConcordError {
  return new ConcordError(ErrorCodes.INVALID_ARGUMENT, message)
}

/** Undoes `selection.agent`'s changes of `name` since `selection.since` (see the module comment). */
export async function revertAgent(
  context: StoreContext,
  names: Names,
  timeTravel: TimeTravel,
  writes: Writes,
  name: string,
  selection: RevertSelection,
  options: SignalOptions & EncodedProvenance = {},
): Promise<SelectiveRevertReport> {
  context.checkOpen()
  if (typeof selection?.agent !== 'string' || selection.agent.length === 0) throw invalid('a selective revert needs the agent whose changes to undo')
  const since = selection.since ?? 0
  if (typeof since !== 'number' || !Number.isFinite(since)) throw invalid('since must be a time in ms')
  const entry = await names.entry(name, undefined, { mustExist: true, signal: options.signal })
  const meta = entry.state.meta
  const type = meta.type
  if (type === 'automerge') throw invalid(`"${name}": a selective revert of an Automerge document is not supported (revert to a seq instead)`)
  // Every record in order; the agent's since the time are the ones undone.
  const records: StoredRecord[] = []
  let first: number | undefined
  for await (const e of logEntries(context, meta, { from: 1, to: meta.lastSeq, signal: options.signal })) {
    const record = decodeRecord(e.value, { name, seq: e.seq })
    const mine = record.kind === 'delta' && record.agent === selection.agent && (record.authored ?? record.hlc).wall >= since
    if (mine && first === undefined) first = record.seq
    if (first !== undefined) records.push(record)
  }
  const mine = (r: StoredRecord) => r.kind === 'delta' && r.agent === selection.agent && (r.authored ?? r.hlc).wall >= since
  const count = records.filter(mine).length
  if (first === undefined) return { name, records: 0, seq: null }
  const live = entry.replica
  let change: (() => void) | undefined
  if (type === 'yjs') change = textUndo(live as YjsReplica, records.filter(mine))
  else {
    // Replay from the state before the agent's first change, watching what each record does.
    const replay = await timeTravel.at(name, first - 1, options)
    if (type === 'pncounter' || type === 'gcounter') change = counterUndo(live, replay, records, mine)
    else if (type === 'orset' || type === 'gset') change = setUndo(live, replay, records, mine)
    else change = valueUndo(live, replay, records, mine)
  }
  if (!change) return { name, records: count, seq: null }
  const written = await writes.atomic(change, options)
  return { name, records: count, seq: written.filter((r) => r.name === name).at(-1)?.seq ?? null }
}

function textUndo(live: YjsReplica, records: readonly StoredRecord[]): (() => void) | undefined {
  const runs = new Map<number, Array<[number, number]>>()
  for (const record of records) {
    let decoded: ReturnType<typeof Y.decodeUpdate>
    try {
      decoded = Y.decodeUpdate(record.delta)
    } catch {
      continue
    }
    for (const struct of decoded.structs) {
      if (!(struct instanceof Y.Item)) continue
      let list = runs.get(struct.id.client)
      if (!list) runs.set(struct.id.client, (list = []))
      list.push([struct.id.clock, struct.id.clock + struct.length])
    }
  }
  const inside = (client: number, clock: number): number => {
    // The end of the run holding `clock`, or -1.
    for (const [start, end] of runs.get(client) ?? []) if (clock >= start && clock < end) return end
    return -1
  }
  const next = (client: number, clock: number, end: number): number => {
    let nearest = end
    for (const [start] of runs.get(client) ?? []) if (start > clock && start < nearest) nearest = start
    return nearest
  }
  const deletions: Array<{ field: string; index: number; length: number }> = []
  for (const { field, kind } of documentFields(live.doc)) {
    if (kind !== 'text') continue
    let index = 0
    for (let item = live.doc.getText(field)._start; item !== null; item = item.right) {
      if (item.deleted || !item.countable) continue
      let clock = item.id.clock
      const end = item.id.clock + item.length
      while (clock < end) {
        const runEnd = inside(item.id.client, clock)
        const upTo = runEnd >= 0 ? Math.min(end, runEnd) : next(item.id.client, clock, end)
        if (runEnd >= 0) {
          const last = deletions.at(-1)
          const at = index + (clock - item.id.clock)
          if (last && last.field === field && last.index + last.length === at) last.length += upTo - clock
          else deletions.push({ field, index: at, length: upTo - clock })
        }
        clock = upTo
      }
      index += item.length
    }
  }
  if (deletions.length === 0) return undefined
  return () =>
    live.doc.transact(() => {
      for (const d of [...deletions].reverse()) live.doc.getText(d.field).delete(d.index, d.length)
    })
}

function counterUndo(live: Replica, replay: Replica, records: readonly StoredRecord[], mine: (r: StoredRecord) => boolean): (() => void) | undefined {
  let previous = replay.value() as number
  let contribution = 0
  for (const record of records) {
    replay.applyDelta(record.delta)
    const now = replay.value() as number
    if (mine(record)) contribution += now - previous
    previous = now
  }
  if (contribution === 0) return undefined
  if (live.type === 'gcounter') throw invalid(`a grow-only counter cannot go down: the agent added ${contribution}`)
  const counter = live as PNCounterReplica
  return () => {
    if (contribution > 0) counter.decrement(contribution)
    else counter.increment(-contribution)
  }
}

function setUndo(live: Replica, replay: Replica, records: readonly StoredRecord[], mine: (r: StoredRecord) => boolean): (() => void) | undefined {
  // The agent's last action on each element: 'add' or 'remove'.
  const last = new Map<string, { action: 'add' | 'remove'; element: Json }>()
  let previous = new Map((replay.value() as Json[]).map((v) => [canonicalJson(v), v]))
  for (const record of records) {
    replay.applyDelta(record.delta)
    const now = new Map((replay.value() as Json[]).map((v) => [canonicalJson(v), v]))
    const note = (key: string, action: 'add' | 'remove', element: Json): void => {
      // Someone else's later action on the element wins over the agent's.
      if (mine(record)) last.set(key, { action, element })
      else last.delete(key)
    }
    for (const [key, element] of now) if (!previous.has(key)) note(key, 'add', element)
    for (const [key, element] of previous) if (!now.has(key)) note(key, 'remove', element)
    previous = now
  }
  const present = new Set((live.value() as Json[]).map((v) => canonicalJson(v)))
  const toRemove = [...last].filter(([key, a]) => a.action === 'add' && present.has(key)).map(([, a]) => a.element)
  const toAdd = [...last].filter(([key, a]) => a.action === 'remove' && !present.has(key)).map(([, a]) => a.element)
  if (toRemove.length === 0 && toAdd.length === 0) return undefined
  if (live.type === 'gset' && toRemove.length > 0) throw invalid('a grow-only set cannot remove the elements the agent added')
  const set = live as ORSetReplica | GSetReplica
  return () => {
    for (const element of toRemove) (set as ORSetReplica).delete(element)
    for (const element of toAdd) set.add(element)
  }
}

function valueUndo(live: Replica, replay: Replica, records: readonly StoredRecord[], mine: (r: StoredRecord) => boolean): (() => void) | undefined {
  const keyed = live.type === 'ormap'
  const keysOf = (value: unknown): Map<string, string> => {
    const out = new Map<string, string>()
    if (keyed) for (const [k, v] of Object.entries((value ?? {}) as Record<string, unknown>)) out.set(k, canonicalJson(toJson(v)))
    else out.set('', canonicalJson(toJson(value)))
    return out
  }
  // Per key: the value before the agent's first change of it, and whether the agent changed it last.
  const before = new Map<string, Json | undefined>()
  const lastIsMine = new Map<string, boolean>()
  let previousValue = replay.value()
  let previous = keysOf(previousValue)
  for (const record of records) {
    replay.applyDelta(record.delta)
    const value = replay.value()
    const now = keysOf(value)
    for (const key of new Set([...previous.keys(), ...now.keys()])) {
      if (previous.get(key) === now.get(key)) continue
      if (mine(record)) {
        if (!before.has(key)) before.set(key, keyed ? toJson((previousValue as Record<string, unknown>)[key]) : toJson(previousValue))
        lastIsMine.set(key, true)
      } else lastIsMine.set(key, false)
    }
    previous = now
    previousValue = value
  }
  const undo = [...lastIsMine].filter(([, m]) => m).map(([key]) => key)
  if (undo.length === 0) return undefined
  return () => {
    for (const key of undo) {
      const old = before.get(key)
      if (keyed) {
        const map = live as ORMapReplica
        if (old === undefined || old === null) map.delete(key)
        else map.set(key, old)
      } else if (live.type === 'ewflag') {
        const flag = live as EWFlagReplica
        if (old === true) flag.enable()
        else flag.disable()
      } else {
        const register = live as LWWRegisterReplica | MVRegisterReplica
        if (old === null || old === undefined || (Array.isArray(old) && live.type === 'mv-register' && old.length === 0)) register.clear()
        else register.set(live.type === 'mv-register' && Array.isArray(old) ? (old[0] as Json) : old)
      }
    }
  }
}
