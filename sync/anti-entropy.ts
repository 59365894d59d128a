/**
 * Anti-entropy of a sync session: the VERSIONS this side sends (and when:
 * on open, on gaps, on a resync timeout, periodically), and the answer to a
 * remote VERSIONS queued (what the remote lacks, in bundles that the receiver
 * applies all or none). The answer itself is computed by sync/answer.ts
 * (which names, their deltas, in slices), sync/answer-records.ts (records
 * instead of merged state) and sync/answer-bundles.ts (the bundles).
 */
import { answerInSlices, type AnswerContext } from './answer.ts'
import { SLICE_NAMES, unreadable, withHeld } from './held-slices.ts'
import type { HostedName, SyncHost } from './host.ts'
import { encodeMessage, type VersionEntry } from './messages.ts'
import { matchesFilter, type NameFilter } from './names.ts'
import type { Outbox } from './outbound.ts'
import type { Reconciler } from './reconcile-session.ts'
import type { SessionStats } from './session-types.ts'

/** The answer's bundle size, re-exported for sync/session.ts (which re-exports it). */
export { ANSWER_BUNDLE_BYTES } from './answer-bundles.ts'

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
