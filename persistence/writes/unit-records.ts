/**
 * The records of a unit: built into a batch from the unit's log items
 * (a repair `state` record first where the replica holds more than its
 * log, this store's own changes signed, every delta checked against the
 * limit its replica loads back), and shaped as a `committed` event gives
 * them.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import type { NameEntry } from '../names/entry.ts'
import type { BatchBuilder, CommittedRecord } from '../pipeline/committer.ts'
import type { CommittedUnitRecord } from '../store-types.ts'
import { afterWrite, recordLimit } from './checkpoints.ts'
import type { LogItem } from './writes.ts'

/**
 * Adds the records of `items` to a batch: first, for a name rolled back
 * or undone in place by a compensating change (its replica holds structs
 * the log lacks), a `state` record of what the replica holds beyond the
 * logged state. A delta larger than the name's replica accepts back
 * (`limits.maxBytes`) is refused with `CONCORD_LIMIT_EXCEEDED` (the unit
 * fails and the name is rolled back): the store never writes a record it
 * could not load again.
 */
export function buildAppends(context: StoreContext, b: BatchBuilder, items: readonly LogItem[]): CommittedRecord[] {
  const now = context.now()
  const records: CommittedRecord[] = []
  const repaired = new Map<NameEntry, Uint8Array>()
  const signing = signingOf(context, items)
  for (const item of items) {
    const { entry } = item
    const since = entry.repairSince
    if (since !== undefined && !repaired.has(entry)) {
      repaired.set(entry, since)
      const beyond = entry.replica.deltaSince(since)
      if (beyond) {
        const delta = checkedDelta(entry, beyond)
        const state = { delta, hlc: item.hlc, agent: context.agentId, kind: 'state' as const, now }
        records.push(b.append(entry.state, signing ? { ...state, ...signing.stamp(entry, item.hlc, delta) } : state))
      }
    }
    const delta = checkedDelta(entry, item.delta)
    const own = signing !== undefined && !item.remote && item.signature === undefined && item.agent === signing.agent
    records.push(
      b.append(entry.state, {
        delta,
        hlc: item.hlc,
        agent: item.agent,
        message: item.message,
        authored: item.authored,
        metaJson: item.metaJson,
        signature: item.signature,
        ...(own ? signing.stamp(entry, item.hlc, delta) : {}),
        now,
      }),
    )
  }
  const entries = new Set(items.map((item) => item.entry))
  b.onCommit(() => {
    for (const [entry, since] of repaired) entry.caughtUp(since)
    for (const entry of entries) afterWrite(context, entry)
  })
  return records
}

/** A record as a `committed` event gives it: an optional field only when set (the common record has none of them). */
export function unitRecord(r: CommittedRecord, type: ReplicaType): CommittedUnitRecord {
  const out: { -readonly [K in keyof CommittedUnitRecord]: CommittedUnitRecord[K] } = {
    name: r.name,
    type,
    seq: r.seq,
    delta: r.delta,
    kind: r.kind,
    agent: r.agent,
    authored: r.authored ?? r.hlc,
  }
  if (r.message !== undefined) out.message = r.message
  if (r.metaJson !== undefined) out.metaJson = r.metaJson
  if (r.signature !== undefined) out.signature = r.signature
  return out
}

/**
 * How the records of a unit of this store's own changes are signed, or
 * undefined when the store does not sign them (no key, or another author).
 * Every record of the unit is logged, sent and signed with the provenance
 * of its first change (its author, message, meta, and its time as
 * `authored`), which is what a receiver logs for each of them.
 */
function signingOf(context: StoreContext, items: readonly LogItem[]) {
  const first = items[0]
  if (first === undefined || first.remote || first.signature !== undefined || first.authored !== undefined || !context.signatures.signs(first.agent))
    return undefined
  const { agent, message, metaJson } = first
  const authored = first.hlc
  return {
    agent,
    stamp(entry: NameEntry, hlc: HlcTimestamp, delta: Uint8Array) {
      const signature = context.signatures.sign({ name: entry.name, type: entry.type, agent, authored, message, metaJson }, delta)
      const same = hlc.wall === authored.wall && hlc.logical === authored.logical
      return { agent, message, metaJson, authored: same ? undefined : authored, signature }
    },
  }
}

/** `delta`, if the name's replica accepts it back on reload; else `CONCORD_LIMIT_EXCEEDED`. */
function checkedDelta(entry: NameEntry, delta: Uint8Array): Uint8Array {
  const limit = recordLimit(entry)
  if (delta.length > limit) {
    throw new ConcordError(
      ErrorCodes.LIMIT_EXCEEDED,
      `"${entry.name}": a change of ${delta.length} bytes is over the limit of ${limit} bytes its replica loads back (limits.maxBytes); it was refused and the name rolled back`,
    )
  }
  return delta
}
