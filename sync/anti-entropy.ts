/**
 * Anti-entropy of a sync session: the VERSIONS this side sends (and when:
 * on open, on gaps, on a resync timeout, periodically), and the answer to a
 * remote VERSIONS (what the remote lacks, in bundles that the receiver
 * applies all or none).
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { NameInfo, SyncHost } from './host.ts'
import { encodeMessage, type DeltaEntry, type VersionEntry } from './messages.ts'
import { matchesFilter, type NameFilter } from './names.ts'
import type { Outbox } from './outbound.ts'
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
 * The versions of the local names within `filter` that the remote may read
 * (`readable`; a name it may not read is not listed), for a VERSIONS message.
 */
export async function listVersions(host: SyncHost, filter: NameFilter, readable: (name: string) => boolean): Promise<VersionEntry[]> {
  const entries: VersionEntry[] = []
  for (const { name, type } of await host.list()) {
    if (!matchesFilter(filter, name) || !readable(name)) continue
    entries.push({ name, replicaType: type, version: host.version(name) })
  }
  return entries
}

/** What {@link answerBundles} needs to know about the remote. */
export interface AnswerContext {
  /** The names the remote asked for. */
  readonly filter: NameFilter
  /** Whether the remote may read a name (the admission's rule). */
  readonly mayRead: (name: string) => boolean
  readonly host: SyncHost
  /** Called for a remote version that does not decode (the name is skipped). */
  readonly malformed: (why: string) => void
}

/**
 * The answer to a remote VERSIONS: the deltas of the local `names` that the
 * remote may read and lacks (skipping names it holds as another type), in
 * bundles of up to {@link ANSWER_BUNDLE_BYTES} delta bytes, in list order.
 */
export function answerBundles(names: Iterable<NameInfo>, entries: readonly VersionEntry[], context: AnswerContext): DeltaEntry[][] {
  const theirs = new Map<string, VersionEntry>()
  for (const entry of entries) theirs.set(entry.name, entry)
  const answer: DeltaEntry[][] = []
  let bundle: DeltaEntry[] = []
  let bundleBytes = 0
  const closeBundle = (): void => {
    if (bundle.length > 0) answer.push(bundle)
    bundle = []
    bundleBytes = 0
  }
  for (const { name, type } of names) {
    if (!matchesFilter(context.filter, name) || !context.mayRead(name)) continue
    const known = theirs.get(name)
    if (known && known.replicaType !== type) continue // the remote would refuse it: a type mismatch
    let delta: Uint8Array | null
    try {
      delta = context.host.deltaSince(name, known ? known.version : null)
    } catch (error) {
      if (!isConcordError(error, ErrorCodes.DECODE_ERROR)) throw error
      context.malformed(`bad version for "${name}"`)
      continue
    }
    if (!delta) continue
    if (bundle.length > 0 && bundleBytes + delta.length > ANSWER_BUNDLE_BYTES) closeBundle()
    bundle.push({ name, replicaType: type, delta })
    bundleBytes += delta.length
  }
  closeBundle()
  return answer
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
}

/**
 * The anti-entropy state of one session: when our last VERSIONS went out,
 * whether its answer (DONE) is still due, and whether the first one came.
 */
export class AntiEntropy {
  /** When the VERSIONS still waiting for its DONE was sent. */
  private pendingSince: number | undefined
  private lastVersionsAt = 0
  private syncedOnce = false

  constructor(private readonly context: AntiEntropyContext) {}

  /** Whether a VERSIONS of ours waits for its answer. */
  get pending(): boolean {
    return this.pendingSince !== undefined
  }

  /** Whether a VERSIONS of ours got no answer within `timeoutMs` (time to repeat it). */
  resyncOverdue(now: number, timeoutMs: number): boolean {
    return this.pendingSince !== undefined && now - this.pendingSince >= timeoutMs
  }

  /** Whether the periodic VERSIONS every `intervalMs` is due (0: never). */
  periodicDue(now: number, intervalMs: number): boolean {
    return intervalMs > 0 && now - this.lastVersionsAt >= intervalMs && this.pendingSince === undefined
  }

  /** Queues our VERSIONS: built asynchronously (list() may be async) but queued in order. */
  sendVersions(): void {
    const { host, filter, outbox, stats } = this.context
    const now = this.context.now()
    this.pendingSince = now
    this.lastVersionsAt = now
    stats.versionsSent++
    const slot = outbox.reserveControl()
    listVersions(host, filter, this.context.mayRead).then(
      (entries) => {
        slot.frame = encodeMessage({ type: 'versions', entries })
        outbox.pump()
      },
      (error) => this.context.fail(`could not list names: ${(error as Error)?.message ?? String(error)}`),
    )
  }

  /** Records a DONE (the answer to our VERSIONS); true the first time (the session is then synced). */
  done(): boolean {
    this.pendingSince = undefined
    if (this.syncedOnce) return false
    this.syncedOnce = true
    return true
  }

  /**
   * Answers a remote VERSIONS: everything queued is superseded by the
   * answer computed now, queued as bundles then DONE. `closed` is checked
   * once the names are listed.
   */
  async answer(entries: readonly VersionEntry[], remote: AnswerContext, closed: () => boolean): Promise<void> {
    const marks = this.context.outbox.beginAnswer()
    const names = await this.context.host.list()
    if (closed()) return
    this.context.outbox.queueAnswer(answerBundles(names, entries, remote), marks)
  }
}
