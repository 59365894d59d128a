/**
 * Answers made of records (sync/PROTOCOL.md "Answers made of records"): when
 * the remote takes them, what it lacks travels as the logged changes it
 * lacks, as the commits they were, with their provenance, within bounds;
 * else, or beyond them, as merged state in bundles (sync/answer-bundles.ts).
 */
import type { HostRecord, SyncHost } from './host.ts'
import { ANSWER_BUNDLE_BYTES, bundle } from './answer-bundles.ts'
import { WIRE_LIMITS, type DeltaEntry } from './messages.ts'
import type { OutgoingProvenance } from './outbound.ts'

/**
 * Bounds of the records one answer carries (sync/PROTOCOL.md "Answers made
 * of records"): at most this many delta bytes of records over every name,
 * {@link ANSWER_MAX_RECORDS} records (each is a commit of the remote's
 * window and queue) and {@link ANSWER_RECORD_NAMES} names whose log is read;
 * beyond, names are answered with merged state.
 */
export const ANSWER_RECORD_BYTES = 8 * 1024 * 1024
/** See {@link ANSWER_RECORD_BYTES}. */
export const ANSWER_MAX_RECORDS = 1024
/** See {@link ANSWER_RECORD_BYTES}. */
export const ANSWER_RECORD_NAMES = 256
/**
 * A name's records go instead of its merged state only while their deltas
 * are at most this many times the state's bytes, plus
 * {@link RECORD_SLACK_BYTES} (small changes cost more as records than
 * merged, and that is their point).
 */
export const RECORD_FACTOR = 4
/** See {@link RECORD_FACTOR}. */
export const RECORD_SLACK_BYTES = 64 * 1024

/** A commit of an answer made of records: one logged change with its provenance. */
export interface AnswerCommit {
  readonly entries: readonly DeltaEntry[]
  readonly provenance?: OutgoingProvenance | undefined
}

/**
 * An answer: the records that carry what the remote lacks (when it takes
 * them), then merged state in bundles: `bundles` of the names that may
 * share a unit (together), `independent` ones of the names that never did
 * (small, see {@link INDEPENDENT_BUNDLE_NAMES}).
 */
export interface Answer {
  readonly records: readonly AnswerCommit[]
  readonly bundles: readonly (readonly DeltaEntry[])[]
  readonly independent: readonly (readonly DeltaEntry[])[]
}

/** What {@link withRecords} needs to know about the remote and the host (a part of the answer's context). */
export interface RecordsContext {
  readonly host: SyncHost
  /** Counts what an answer carried: commits of records, names of merged state. */
  readonly answered?: (records: number, merged: number) => void
  /**
   * Whether a name may share a unit with another (the host's `joints`);
   * absent: every name may (the merged state goes in bundles of
   * {@link ANSWER_BUNDLE_BYTES}, as before).
   */
  readonly joint?: ((name: string) => boolean) | undefined
  /**
   * Set when the remote takes answers made of records (it announced
   * `answer-records` with `provenance`): this side's agent id (whose plain
   * changes need no PROVENANCE) and whether the remote takes signatures.
   */
  readonly records?:
    | {
        readonly agentId: string
        readonly signatures: boolean
        /** Whether the remote refused records of this name before (it is then answered with merged state). */
        readonly refused?: ((name: string) => boolean) | undefined
      }
    | undefined
}

/** A name the remote lacks something of: the delta, and the remote's version it was computed from. */
export interface Lacked {
  readonly entry: DeltaEntry
  readonly since: Uint8Array | null
}

/** A record of an answer, with the name it belongs to. */
interface NamedRecord {
  readonly entry: DeltaEntry
  readonly record: HostRecord
}

/** Whether `next` may join the commit of `first`: same author, message and meta; signed both or neither, and then one authored time (a signature covers it). */
function sameCommit(first: HostRecord, next: HostRecord): boolean {
  const a = first.provenance
  const b = next.provenance
  if (a.agent !== b.agent || a.message !== b.message || a.metaJson !== b.metaJson) return false
  if (first.signature === undefined || next.signature === undefined) return first.signature === next.signature
  return a.authored?.wall === b.authored?.wall && a.authored?.logical === b.authored?.logical
}

/**
 * The commits that carry `records` (each name's oldest first): in the
 * order they were logged here (one clock stamps every name's records, and
 * the records of one commit one after another), each run of records of one
 * provenance together, so that the records of a commit of several names
 * travel as one commit again (a run may hold several commits of one
 * author: more atomic, never less), with the PROVENANCE a live commit of
 * them has: none for this side's own plain unsigned change; the signatures
 * to a remote that takes them. A run is cut at {@link ANSWER_BUNDLE_BYTES}.
 */
function recordCommits(records: readonly NamedRecord[], remote: { readonly agentId: string; readonly signatures: boolean }): AnswerCommit[] {
  const byTime = [...records].sort((x, y) => x.record.logged.wall - y.record.logged.wall || x.record.logged.logical - y.record.logged.logical)
  const groups: NamedRecord[][] = []
  let bytes = 0
  for (const item of byTime) {
    const group = groups.at(-1)
    const size = item.record.delta.length
    if (group && group.length < WIRE_LIMITS.maxEntries && bytes + size <= ANSWER_BUNDLE_BYTES && sameCommit(group[0].record, item.record)) {
      group.push(item)
      bytes += size
    } else {
      groups.push([item])
      bytes = size
    }
  }
  return groups.map((group) => {
    const signatures = remote.signatures && group.some(({ record }) => record.signature !== undefined) ? group.map(({ record }) => record.signature) : undefined
    const entries = group.map(({ entry, record }, at) =>
      signatures?.[at] === undefined
        ? { name: entry.name, replicaType: entry.replicaType, delta: record.delta }
        : { name: entry.name, replicaType: entry.replicaType, delta: record.delta, signature: signatures[at] },
    )
    const provenance = group[0].record.provenance
    const { agent, message, metaJson } = provenance
    // This peer's own plain change needs none (the remote logs it under this peer), as live.
    if (signatures === undefined && message === undefined && metaJson === undefined && (agent === undefined || agent === remote.agentId)) return { entries }
    return { entries, provenance: signatures === undefined ? provenance : { ...provenance, signatures } }
  })
}

/**
 * The answer for `lacked`. When the remote takes records and the host tells,
 * within the bounds ({@link ANSWER_RECORD_BYTES}, {@link RECORD_FACTOR}),
 * the logged changes it lacks of every name: those, as the commits they
 * were (see {@link recordCommits}) with their provenance, then what they
 * cannot carry (a Yjs delete set) as merged state. All or none: when one
 * name's records cannot be told, every name goes as merged state (a name
 * sent as merged state beside records of another could show half of a
 * commit of both on a receiver that stops in the middle). Names whose
 * records the remote refused before (`records.refused`) go as merged state
 * beside the records of the others.
 */
export async function withRecords(lacked: readonly Lacked[], context: RecordsContext, mergedOnly = false): Promise<Answer> {
  const { host, records: remote } = context
  // One instant for every name's records, taken now that the deltas are computed (before any await).
  const until = remote && host.logClock?.()
  const allMerged = (): Answer => {
    context.answered?.(0, lacked.length)
    return {
      records: [],
      ...bundle(
        lacked.map((item) => item.entry),
        context.joint,
      ),
    }
  }
  if (mergedOnly || !remote || !host.recordsSince || lacked.length === 0) return allMerged()
  // Over ANSWER_RECORD_NAMES names whose log would be read: merged state at once (no log read to find that out).
  if (lacked.length > ANSWER_RECORD_NAMES && lacked.filter(({ entry }) => !remote.refused?.(entry.name)).length > ANSWER_RECORD_NAMES) return allMerged()
  const taken: NamedRecord[] = []
  const merged: DeltaEntry[] = []
  let bytes = ANSWER_RECORD_BYTES
  let count = ANSWER_MAX_RECORDS
  let names = 0
  for (const { entry, since } of lacked) {
    if (remote.refused?.(entry.name)) {
      merged.push(entry)
      continue
    }
    if (++names > ANSWER_RECORD_NAMES || count <= 0 || bytes <= 0) return allMerged()
    const maxBytes = Math.min(bytes, RECORD_FACTOR * entry.delta.length + RECORD_SLACK_BYTES)
    const run = await host.recordsSince(entry.name, since, entry.delta, { maxBytes, maxRecords: count, until }).catch(() => undefined)
    if (!run) return allMerged()
    for (const record of run.records) {
      taken.push({ entry, record })
      bytes -= record.delta.length
      count--
    }
    if (run.residual) merged.push({ name: entry.name, replicaType: entry.replicaType, delta: run.residual })
  }
  const commits = recordCommits(taken, remote)
  context.answered?.(commits.length, merged.length)
  return { records: commits, ...bundle(merged, context.joint) }
}
