/**
 * Anti-entropy of a sync session: the VERSIONS this side sends (and when:
 * on open, on gaps, on a resync timeout, periodically), and the answer to a
 * remote VERSIONS (what the remote lacks, in bundles that the receiver
 * applies all or none).
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { HostRecord, HostedName, SyncHost } from './host.ts'
import { WIRE_LIMITS, encodeMessage, type DeltaEntry, type VersionEntry } from './messages.ts'
import { matchesFilter, type NameFilter } from './names.ts'
import type { Outbox, OutgoingProvenance } from './outbound.ts'
import type { Reconciler } from './reconcile-session.ts'
import type { SessionStats } from './session-types.ts'

/**
 * An anti-entropy answer travels as few TRANSACTIONs as possible: the names
 * it carries are bundled (up to this many delta bytes per bundle) so that
 * the receiver applies them all or none. A multi-name transaction whose
 * names were answered separately could otherwise land half on a receiver
 * that crashes between them.
 */
export const ANSWER_BUNDLE_BYTES = 16 * 1024 * 1024

/**
 * Names that never shared a unit on this side (the host's `joints` says
 * so) need no bundle of their own kind: they travel in bundles of at most
 * this many names and {@link INDEPENDENT_BUNDLE_BYTES} delta bytes, each
 * applied and made durable on its own, so that a receiver of a first sync
 * holds one bundle's names at a time, not every name (its memory is
 * bounded by its cache). The names that did share a unit (joint) stay in
 * bundles as above, all of them together.
 */
export const INDEPENDENT_BUNDLE_NAMES = 128
/** See {@link INDEPENDENT_BUNDLE_NAMES}. */
export const INDEPENDENT_BUNDLE_BYTES = 1024 * 1024

/**
 * Expensive work (our VERSIONS, an answer) is done in slices of this many
 * names, or of {@link SLICE_BYTES} delta bytes, with a turn of the event
 * loop between slices (`SyncHost.yieldTurn`), so one peer's anti-entropy
 * never holds the loop for long.
 */
export const SLICE_NAMES = 64
/** See {@link SLICE_NAMES}. */
export const SLICE_BYTES = 4 * 1024 * 1024

/**
 * Runs `read` with `names` readable: held by the host (`host.hold`, which
 * may load them) until it returns, when the host holds names; at once
 * otherwise (every name is readable).
 */
async function withHeld<T>(host: SyncHost, names: readonly string[], read: () => T): Promise<T> {
  if (!host.hold) return read()
  const release = await host.hold(names)
  try {
    return read()
  } finally {
    release()
  }
}

/** Whether `error` says the host cannot read a name (gone, damaged, not held): the name is left out. */
function unreadable(error: unknown): boolean {
  return isConcordError(error, ErrorCodes.NOT_FOUND) || isConcordError(error, ErrorCodes.CORRUPT_RECORD)
}

/**
 * The versions of the local names within `filter` that the remote may read
 * (`readable`; a name it may not read is not listed), for a VERSIONS message
 * (built in slices of {@link SLICE_NAMES} names, each held while it is read).
 */
export async function listVersions(host: SyncHost, filter: NameFilter, readable: (name: string) => boolean): Promise<VersionEntry[]> {
  const listed = [...(await host.list())].filter(({ name }) => matchesFilter(filter, name) && readable(name))
  const entries: VersionEntry[] = []
  for (let start = 0; start < listed.length; start += SLICE_NAMES) {
    if (start > 0 && host.yieldTurn) await host.yieldTurn()
    const slice = listed.slice(start, start + SLICE_NAMES)
    await withHeld(
      host,
      slice.map((info) => info.name),
      () => {
        for (const { name, type } of slice) {
          let version: Uint8Array
          try {
            version = host.version(name)
          } catch (error) {
            if (unreadable(error)) continue
            throw error
          }
          entries.push({ name, replicaType: type, version })
        }
      },
    )
  }
  return entries
}

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

/** What {@link answerBundles} needs to know about the remote. */
export interface AnswerContext {
  /** The names the remote asked for. */
  readonly filter: NameFilter
  /** Whether the remote may read a name (the admission's rule). */
  readonly mayRead: (name: string) => boolean
  readonly host: SyncHost
  /** Counts what an answer carried: commits of records, names of merged state. */
  readonly answered?: (records: number, merged: number) => void
  /** Called for a remote version that does not decode (the name is skipped). */
  readonly malformed: (why: string) => void
  /**
   * Whether a name may share a unit with another (the host's `joints`);
   * absent: every name may (the merged state goes in bundles of
   * {@link ANSWER_BUNDLE_BYTES}, as before).
   */
  readonly joint?: ((name: string) => boolean) | undefined
  /**
   * Sends bundles of names that never shared a unit (`joint` says so) while
   * the rest of the answer is computed (see {@link answerInSlices}); absent:
   * the answer goes out whole, once computed.
   */
  readonly stream?: ((independent: readonly (readonly DeltaEntry[])[]) => void) | undefined
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

/** One name of an answer: the remote's version of it (`null`: it lacks the name). */
interface Wanted {
  readonly name: string
  readonly type: ReplicaType
  readonly since: Uint8Array | null
}

/** The names of `names` the remote may read and could take (not held there as another type). */
function wantedNames(names: Iterable<HostedName>, entries: readonly VersionEntry[], context: AnswerContext): Wanted[] {
  const theirs = new Map<string, VersionEntry>()
  for (const entry of entries) theirs.set(entry.name, entry)
  const wanted: Wanted[] = []
  for (const { name, type } of names) {
    if (!matchesFilter(context.filter, name) || !context.mayRead(name)) continue
    const known = theirs.get(name)
    if (known && known.replicaType !== type) continue // the remote would refuse it: a type mismatch
    wanted.push({ name, type, since: known ? known.version : null })
  }
  return wanted
}

/** What the remote lacks of one name, or null; a remote version that does not decode, or a name the host cannot read, skips the name. */
function deltaOf(wanted: Wanted, context: AnswerContext): Uint8Array | null {
  try {
    return context.host.deltaSince(wanted.name, wanted.since)
  } catch (error) {
    if (unreadable(error)) return null
    if (!isConcordError(error, ErrorCodes.DECODE_ERROR)) throw error
    context.malformed(`bad version for "${wanted.name}"`)
    return null
  }
}

/** Groups deltas, in order, into bundles of up to `maxBytes` delta bytes and `maxEntries` entries. */
function group(deltas: readonly DeltaEntry[], maxBytes: number, maxEntries: number): DeltaEntry[][] {
  const answer: DeltaEntry[][] = []
  let current: DeltaEntry[] = []
  let bytes = 0
  for (const entry of deltas) {
    if (current.length > 0 && (bytes + entry.delta.length > maxBytes || current.length >= maxEntries)) {
      answer.push(current)
      current = []
      bytes = 0
    }
    current.push(entry)
    bytes += entry.delta.length
  }
  if (current.length > 0) answer.push(current)
  return answer
}

/**
 * Bundles the merged state of an answer: the names that may share a unit
 * (`joint`; every name without it) in bundles of up to
 * {@link ANSWER_BUNDLE_BYTES} delta bytes and `WIRE_LIMITS.maxEntries`
 * entries, the others in bundles of {@link INDEPENDENT_BUNDLE_NAMES} names
 * and {@link INDEPENDENT_BUNDLE_BYTES}, in order. A transaction is thus
 * never split across bundles: its names are all joint.
 */
export function bundle(
  deltas: readonly DeltaEntry[],
  joint: ((name: string) => boolean) | undefined,
): { readonly bundles: DeltaEntry[][]; readonly independent: DeltaEntry[][] } {
  if (joint === undefined) return { bundles: group(deltas, ANSWER_BUNDLE_BYTES, WIRE_LIMITS.maxEntries), independent: [] }
  const together: DeltaEntry[] = []
  const apart: DeltaEntry[] = []
  for (const entry of deltas) (joint(entry.name) ? together : apart).push(entry)
  return {
    bundles: group(together, ANSWER_BUNDLE_BYTES, WIRE_LIMITS.maxEntries),
    independent: group(apart, INDEPENDENT_BUNDLE_BYTES, INDEPENDENT_BUNDLE_NAMES),
  }
}

/**
 * The answer to a remote VERSIONS: the deltas of the local `names` that the
 * remote may read and lacks (skipping names it holds as another type), in
 * bundles (see {@link bundle}), in list order.
 */
export function answerBundles(
  names: Iterable<HostedName>,
  entries: readonly VersionEntry[],
  context: AnswerContext,
): { readonly bundles: DeltaEntry[][]; readonly independent: DeltaEntry[][] } {
  return bundle(
    lackedNames(names, entries, context).map((lacked) => lacked.entry),
    context.joint,
  )
}

/** A name the remote lacks something of: the delta, and the remote's version it was computed from. */
interface Lacked {
  readonly entry: DeltaEntry
  readonly since: Uint8Array | null
}

function lackedNames(names: Iterable<HostedName>, entries: readonly VersionEntry[], context: AnswerContext): Lacked[] {
  const lacked: Lacked[] = []
  for (const wanted of wantedNames(names, entries, context)) {
    const delta = deltaOf(wanted, context)
    if (delta) lacked.push({ entry: { name: wanted.name, replicaType: wanted.type, delta }, since: wanted.since })
  }
  return lacked
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
async function withRecords(lacked: readonly Lacked[], context: AnswerContext, mergedOnly = false): Promise<Answer> {
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

/**
 * {@link answerBundles}, computed in slices of {@link SLICE_NAMES} names or
 * {@link SLICE_BYTES} delta bytes, each held while it is read, with a turn
 * of the event loop between them (when the host can yield). The result is
 * still one snapshot: a name committed to while the answer is computed (a
 * local transaction that also touched a name computed later, say) is
 * computed at the end, all of them in one turn (held together), so a
 * multi-name commit is never half in the answer.
 *
 * Streamed (`context.stream`, with `joint` known): once the answer is sure
 * to be merged state (no records, or more than {@link ANSWER_RECORD_NAMES}
 * names lack something), the bundles of names that never shared a unit go
 * out as their slices are computed, each of {@link INDEPENDENT_BUNDLE_NAMES}
 * names; what is left (joint names, names committed to meanwhile, a last
 * partial bundle) goes with the end of the answer. A name streamed and then
 * committed to is sent again at the end.
 */
export async function answerInSlices(names: readonly HostedName[], entries: readonly VersionEntry[], context: AnswerContext): Promise<Answer> {
  const { host, joint, stream } = context
  if (!host.yieldTurn && !host.hold) return withRecords(lackedNames(names, entries, context), context)
  const wanted = wantedNames(names, entries, context)
  const deltas: Array<DeltaEntry | null> = []
  // Every wanted name, before anything is read: a commit to one of them meanwhile puts it in `stale`.
  const index = new Map<string, number>()
  for (const [at, item] of wanted.entries()) index.set(item.name, at)
  const stale = new Set<string>()
  const off = host.subscribe((commit) => {
    for (const entry of commit.entries) if (index.has(entry.name)) stale.add(entry.name)
  })
  const compute = (at: number): void => {
    const item = wanted[at]
    const delta = deltaOf(item, context)
    deltas[at] = delta ? { name: item.name, replicaType: item.type, delta } : null
  }
  // Streaming: names computed, not stale and independent, waiting for a full bundle; whether the answer is sure to be merged state.
  const streaming = stream !== undefined && joint !== undefined
  let merged = !context.records || !host.recordsSince
  let lacking = 0
  let streamed = 0
  const ready: number[] = []
  const streamSlice = (start: number, end: number): void => {
    for (let at = start; at < end; at++) {
      const entry = deltas[at]
      if (!entry) continue
      if (!context.records?.refused?.(entry.name)) lacking++
      if (!stale.has(entry.name) && !joint!(entry.name)) ready.push(at)
    }
    if (lacking > ANSWER_RECORD_NAMES) merged = true
    if (!merged || ready.length < INDEPENDENT_BUNDLE_NAMES) return
    const groups = group(
      ready.map((at) => deltas[at]!),
      INDEPENDENT_BUNDLE_BYTES,
      INDEPENDENT_BUNDLE_NAMES,
    )
    // A last bundle not yet full waits for the next slice.
    const last = groups.at(-1)!
    const full = last.length < INDEPENDENT_BUNDLE_NAMES ? groups.slice(0, -1) : groups
    let sent = 0
    for (const bundled of full) sent += bundled.length
    if (sent === 0) return
    // Sent now: the end of the answer leaves them out unless they are committed to meanwhile (then computed again).
    for (const at of ready.splice(0, sent)) deltas[at] = null
    streamed += sent
    context.answered?.(0, sent)
    stream!(full)
  }
  try {
    for (let start = 0; start < wanted.length; ) {
      if (start > 0 && host.yieldTurn) await host.yieldTurn()
      // The slice: up to SLICE_NAMES names, fewer once their deltas reach SLICE_BYTES.
      const end = Math.min(wanted.length, start + SLICE_NAMES)
      const from = start
      if (host.storedDeltas) {
        start = await fromStorage(host, wanted, start, end, deltas, compute)
      } else {
        let at = start
        await withHeld(
          host,
          wanted.slice(start, end).map((item) => item.name),
          () => {
            for (let bytes = 0; at < end && bytes < SLICE_BYTES; at++) {
              // Committed to already: computed at the end.
              if (stale.has(wanted[at].name)) continue
              compute(at)
              bytes += deltas[at]?.delta.length ?? 0
            }
          },
        )
        start = at
      }
      if (streaming) streamSlice(from, start)
    }
    // Names committed to meanwhile, computed again in one turn; holding them may take turns, in which more may come.
    for (let again = new Set(stale); again.size > 0; ) {
      stale.clear()
      const settled = await withHeld(host, [...again], () => {
        if ([...stale].some((name) => !again.has(name))) return false
        for (const name of again) compute(index.get(name)!)
        return true
      })
      if (settled) break
      again = new Set([...again, ...stale])
    }
  } finally {
    off()
  }
  const lacked: Lacked[] = []
  for (const [at, entry] of deltas.entries()) if (entry) lacked.push({ entry, since: wanted[at].since })
  // Part of it went as merged state: the rest goes so too (never records beside merged state of a streamed name).
  return withRecords(lacked, context, streamed > 0)
}

/**
 * A slice of an answer asked of the host's storage first (`storedDeltas`:
 * no name loaded), the names it cannot tell held and read as before (a
 * name in memory, damaged, another schema...); resolves `end`.
 */
async function fromStorage(
  host: SyncHost,
  wanted: readonly Wanted[],
  start: number,
  end: number,
  deltas: Array<DeltaEntry | null>,
  compute: (at: number) => void,
): Promise<number> {
  const found = await host.storedDeltas!(wanted.slice(start, end)).catch(() => undefined)
  const rest: number[] = []
  for (let at = start; at < end; at++) {
    const delta = found?.[at - start]
    if (delta === undefined) rest.push(at)
    else deltas[at] = delta === null ? null : { name: wanted[at].name, replicaType: wanted[at].type, delta }
  }
  if (rest.length > 0) {
    await withHeld(
      host,
      rest.map((at) => wanted[at].name),
      () => {
        for (const at of rest) compute(at)
      },
    )
  }
  return end
}

/** What an {@link AntiEntropy} needs of its session. */
export interface AntiEntropyContext {
  readonly host: SyncHost
  /** The names this side asked for (its VERSIONS lists them). */
  readonly filter: NameFilter
  readonly outbox: Outbox
  readonly stats: SessionStats
  readonly now: () => number
  /** Whether the remote may read a name: our VERSIONS lists only those (called once the session is open). */
  readonly mayRead: (name: string) => boolean
  /** Ends the session (the names could not be listed). */
  readonly fail: (reason: string) => void
  /** The session's reconciler when the remote reconciles (sync/reconcile-session.ts), else undefined: VERSIONS. */
  readonly reconciler?: () => Reconciler | undefined
}

/**
 * Times a resync with no sign of its answer is repeated (each after twice
 * the silence of the one before) before the session gives up on the remote
 * and closes (the reconnect helper dials again).
 */
export const MAX_RESYNC_RETRIES = 3

/** Names whose refused records a session remembers (beyond, it forgets them all and may try records again). */
export const MAX_REFUSED_RECORDS = 4096

/**
 * The anti-entropy state of one session: when our last VERSIONS went out,
 * whether its answer (DONE) is still due, and whether the first one came.
 * The resync timeout measures silence, not total time: anything of the
 * answer that arrives (see {@link AntiEntropy.progress}) restarts it, so a
 * long answer is never asked for again while it is still arriving.
 */
export class AntiEntropy {
  /** When the VERSIONS still waiting for its DONE was sent, or last showed progress. */
  private pendingSince: number | undefined
  /** Repeats of the pending resync since it last showed progress. */
  private retriesValue = 0
  private lastVersionsAt = 0
  private syncedOnce = false
  /** VERSIONS of ours being built. */
  private buildingCount = 0

  constructor(private readonly context: AntiEntropyContext) {}

  /** Whether a VERSIONS of ours waits for its answer. */
  get pending(): boolean {
    return this.pendingSince !== undefined
  }

  /** Repeats of the pending resync since it last showed progress. */
  get retries(): number {
    return this.retriesValue
  }

  /**
   * Whether the pending resync has been silent for `timeoutMs` times two to
   * the power of its {@link retries} (time to repeat it, or to give up).
   */
  resyncOverdue(now: number, timeoutMs: number): boolean {
    return this.pendingSince !== undefined && now - this.pendingSince >= timeoutMs * 2 ** this.retriesValue
  }

  /**
   * Something of the pending resync's answer arrived, or is being handled
   * here (a commit or a chunk of one, a RANGES or WANT): its silence starts
   * again, and so does its count of repeats.
   */
  progress(now: number): void {
    if (this.pendingSince === undefined) return
    this.pendingSince = now
    this.retriesValue = 0
  }

  /** Whether the periodic VERSIONS every `intervalMs` is due (0: never). */
  periodicDue(now: number, intervalMs: number): boolean {
    return intervalMs > 0 && now - this.lastVersionsAt >= intervalMs && this.pendingSince === undefined
  }

  /**
   * Queues our VERSIONS: built asynchronously (list() may be async) but
   * queued in order. With a remote that reconciles (`reconciler`), starts a
   * reconciliation instead (its WANT is answered by DONE like a VERSIONS).
   */
  sendVersions(options: { readonly full?: boolean; readonly opening?: boolean; readonly retry?: boolean } = {}): void {
    const { host, filter, outbox, stats } = this.context
    const now = this.context.now()
    this.retriesValue = options.retry ? this.retriesValue + 1 : 0
    this.pendingSince = now
    this.lastVersionsAt = now
    const reconciler = this.context.reconciler?.()
    if (reconciler && !options.full) {
      // A mutual pair's listener waits for the dialer's reconciliation (its DONE, or the resync timeout).
      if (options.opening && !reconciler.startsOnOpen) return
      stats.reconciliations++
      reconciler.start()
      return
    }
    stats.versionsSent++
    const slot = outbox.reserveControl()
    this.buildingCount++
    listVersions(host, filter, this.context.mayRead).then(
      (entries) => {
        this.buildingCount--
        slot.frame = encodeMessage({ type: 'versions', entries })
        outbox.pump()
      },
      (error) => {
        this.buildingCount--
        this.context.fail(`could not list names: ${(error as Error)?.message ?? String(error)}`)
      },
    )
  }

  /** Whether a VERSIONS of ours is being built (a REQUEST now is answered by it). */
  get building(): boolean {
    return this.buildingCount > 0 || (this.context.reconciler?.()?.building ?? false)
  }

  /** Names whose records the remote refused (answered with merged state from then on). */
  private readonly refusedRecords = new Set<string>()
  /** The remote's versions of the names the last answer gave records of (what a merged state sent after a refusal starts from). */
  private readonly remoteVersions = new Map<string, Uint8Array>()

  /**
   * The remote refused a commit of records of `name` (a signature it does
   * not take, say): it is sent the name's merged state now, as a live
   * commit, and every later answer gives it merged state (logged there
   * under this peer: what this peer holds, vouched for by no author).
   */
  recordsRefused(name: string): void {
    if (this.refusedRecords.has(name)) return
    if (this.refusedRecords.size >= MAX_REFUSED_RECORDS) this.refusedRecords.clear()
    this.refusedRecords.add(name)
    const { host, outbox } = this.context
    const type = host.typeOf(name)
    if (type === undefined) return
    const since = this.remoteVersions.get(name) ?? null
    withHeld(host, [name], () => host.deltaSince(name, since)).then(
      (delta) => {
        if (delta && outbox.live) outbox.queueCommit([{ name, replicaType: type, delta }])
      },
      () => undefined, // unreadable here, or a version that does not decode: the next resync answers it
    )
  }

  /** Records a DONE (the answer to our VERSIONS); true the first time (the session is then synced). */
  done(): boolean {
    this.pendingSince = undefined
    this.retriesValue = 0
    if (this.syncedOnce) return false
    this.syncedOnce = true
    return true
  }

  /**
   * Answers a remote VERSIONS: everything queued is superseded by the
   * answer computed now, queued as bundles then DONE. `closed` is checked
   * once the names are listed. With `only`, the answer considers those
   * names alone (a reconciliation's WANT), else every local name.
   */
  async answer(entries: readonly VersionEntry[], remote: AnswerContext, closed: () => boolean, only?: readonly HostedName[]): Promise<void> {
    const marks = this.context.outbox.beginAnswer()
    const names = only ? [...only] : [...(await this.context.host.list())]
    if (closed()) return
    const records = remote.records && { ...remote.records, refused: (name: string) => this.refusedRecords.has(name) }
    // Which names may share a unit: read before the deltas, so that a unit committed meanwhile marks its names first.
    const joint = this.context.host.joints ? await this.context.host.joints().catch(() => undefined) : undefined
    if (closed()) return
    const outbox = this.context.outbox
    const answer = await answerInSlices(names, entries, { ...remote, records, joint, stream: (parts) => outbox.queueAnswerPart(parts) })
    // The remote's versions of the names answered with records: where a merged state starts from if it refuses them.
    const recorded = new Set(answer.records.flatMap((commit) => commit.entries.map((entry) => entry.name)))
    this.remoteVersions.clear()
    for (const entry of entries) if (recorded.has(entry.name)) this.remoteVersions.set(entry.name, entry.version)
    if (closed()) return
    this.context.outbox.queueAnswer(answer, marks)
  }
}
