/**
 * The answer to a remote VERSIONS (or a reconciliation's WANT): which of
 * the local names the remote may read and lacks something of, and their
 * deltas, computed in slices that stay one snapshot, streamed where they
 * can be; made into records or bundles by sync/answer-records.ts.
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { INDEPENDENT_BUNDLE_BYTES, INDEPENDENT_BUNDLE_NAMES, bundle, group } from './answer-bundles.ts'
import { ANSWER_RECORD_NAMES, withRecords, type Answer, type Lacked, type RecordsContext } from './answer-records.ts'
import { SLICE_BYTES, SLICE_NAMES, unreadable, withHeld } from './held-slices.ts'
import type { HostedName, SyncHost } from './host.ts'
import type { DeltaEntry, VersionEntry } from './messages.ts'
import { matchesFilter, type NameFilter } from './names.ts'

/** What {@link answerBundles} needs to know about the remote. */
export interface AnswerContext extends RecordsContext {
  /** The names the remote asked for. */
  readonly filter: NameFilter
  /** Whether the remote may read a name (the admission's rule). */
  readonly mayRead: (name: string) => boolean
  /** Called for a remote version that does not decode (the name is skipped). */
  readonly malformed: (why: string) => void
  /**
   * Sends bundles of names that never shared a unit (`joint` says so) while
   * the rest of the answer is computed (see {@link answerInSlices}); absent:
   * the answer goes out whole, once computed.
   */
  readonly stream?: ((independent: readonly (readonly DeltaEntry[])[]) => void) | undefined
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

function lackedNames(names: Iterable<HostedName>, entries: readonly VersionEntry[], context: AnswerContext): Lacked[] {
  const lacked: Lacked[] = []
  for (const wanted of wantedNames(names, entries, context)) {
    const delta = deltaOf(wanted, context)
    if (delta) lacked.push({ entry: { name: wanted.name, replicaType: wanted.type, delta }, since: wanted.since })
  }
  return lacked
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
