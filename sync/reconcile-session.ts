/**
 * Range-based reconciliation in a session (sync/PROTOCOL.md
 * "Reconciliation"), used instead of VERSIONS when both HELLOs carry the
 * `reconcile` extension. Each side pulls: as initiator it sends RANGES over
 * the items of its names the remote may read, the remote answers each
 * round, and once nothing differs any more the initiator sends WANT (the
 * names that differ, with its versions, and those it lacks); the remote
 * answers that as it answers VERSIONS (bundles, then DONE), adding the
 * names it found the initiator lacks and the names committed to on its side
 * since its snapshot of the reconciliation (their change would otherwise
 * fall between the snapshot and the answer).
 *
 * When both sides ask for the same names (the usual case: every name), the
 * item sets of the two pulls are the same, so one reconciliation serves
 * both ways (mutual): only the dialer starts one on open, and after
 * answering the WANT the responder sends a WANT back with its versions of
 * the names that differ, which the initiator answers with those, the names
 * it found the responder lacks, and the names committed to on its side
 * since its snapshot.
 */
import type { Unsubscribe } from '../crdt/emitter.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { HostedName, SyncHost } from './host.ts'
import type { Message, VersionEntry, WantMessage } from './messages.ts'
import type { NameFilter } from './names.ts'
import { collectItems } from './item-index.ts'
import { answerRanges, openingRanges, settled, type ItemSet } from './reconcile.ts'
import type { Range, RangesMessage } from './reconcile-codec.ts'

/** Rounds of one reconciliation at most; beyond, the initiator falls back to VERSIONS. */
export const MAX_ROUNDS = 64
/** Names committed to during one reconciliation that the responder tracks; beyond, its answer covers every name. */
export const MAX_CHANGED_NAMES = 1 << 16
/** Names held at a time while digests or versions are read. */
const SLICE_NAMES = 64

/** What a {@link Reconciler} needs of its session. */
export interface ReconcilerContext {
  readonly host: SyncHost
  /** The names this side asked for. */
  readonly filter: NameFilter
  /** The names the remote asked for (once its HELLO was accepted). */
  readonly remoteFilter: () => NameFilter
  /** Whether the remote may read a name. */
  readonly mayRead: (name: string) => boolean
  /** Sends a control message. */
  readonly send: (message: Message) => void
  /** Answers the remote: the deltas of `names` (every name: undefined) it lacks per `entries`, then DONE. */
  readonly answer: (names: HostedName[] | undefined, entries: readonly VersionEntry[]) => Promise<void>
  /** This side's reconciliation cannot go on (too many rounds): resync with VERSIONS instead. */
  readonly fallback: () => void
  /** Ends the session (names could not be read). */
  readonly fail: (reason: string) => void
  /** Whether a new reconciliation of the remote may start now (the rate of expensive requests); else its RANGES is dropped. */
  readonly admit: () => boolean
  /** A RANGES dropped: over the rate, or past {@link MAX_ROUNDS} of one reconciliation. */
  readonly dropped: () => void
  /** Whether both sides' item sets are the same sets (same filters): one reconciliation then serves both ways. */
  readonly mutual: () => boolean
  /** Whether this side dialed the connection (in a mutual pair, the dialer starts the first reconciliation). */
  readonly dialer: boolean
  /** Whether a local commit came from this session's remote (it holds that change: not noted as changed). */
  readonly fromRemote: (origin: unknown) => boolean
}

/** What a side answers for, besides the names a WANT lists: those it found the other side lacks, and those committed to since its snapshot. */
interface Unasked {
  readonly push: Set<string>
  readonly changed: Set<string>
  overflow: boolean
  readonly off: Unsubscribe
}

interface Initiating {
  readonly unasked: Unasked
  readonly id: number
  readonly set: ItemSet
  readonly differ: Set<string>
  readonly lacking: Set<string>
  rounds: number
}

interface Responding {
  readonly unasked: Unasked
  readonly id: number
  readonly set: ItemSet
  /** Names the initiator holds and we lack (it listed every item of a range): asked for in a mutual WANT back. */
  readonly lacking: Set<string>
  rounds: number
}

/** One session's reconciliations: the one it started (initiator) and the one the remote started (responder). */
export class Reconciler {
  private nextId = 1
  private initiating: Initiating | undefined
  /** A mutual reconciliation of ours whose WANT went out: the WANT back is answered from it. */
  private awaiting: Initiating | undefined
  private responding: Responding | undefined
  private buildingCount = 0
  /** Rounds served, for statistics. */
  rounds = 0

  constructor(private readonly context: ReconcilerContext) {}

  /** Whether a reconciliation of ours is being started. */
  get building(): boolean {
    return this.buildingCount > 0
  }

  /** Whether this side starts a reconciliation when the session opens (in a mutual pair only the dialer does; the listener waits for its DONE). */
  get startsOnOpen(): boolean {
    return this.context.dialer || !this.context.mutual()
  }

  /** Starts a reconciliation (this side pulls); a newer one supersedes one under way. */
  start(): void {
    const id = this.nextId++
    this.buildingCount++
    const unasked = this.track()
    collectItems(this.context.host, this.context.filter, this.context.mayRead).then(
      (set) => {
        this.buildingCount--
        if (id !== this.nextId - 1) {
          unasked.off()
          return
        }
        this.endInitiating()
        this.initiating = { unasked, id, set, differ: new Set(), lacking: new Set(), rounds: 0 }
        this.sendRanges(id, 'initiator', openingRanges(set))
      },
      (error) => {
        this.buildingCount--
        unasked.off()
        this.context.fail(`could not list names: ${(error as Error)?.message ?? String(error)}`)
      },
    )
  }

  /** Starts noting the names committed to here (from before a snapshot is read). */
  private track(): Unasked {
    const changed = new Set<string>()
    const unasked: Unasked = {
      push: new Set(),
      changed,
      overflow: false,
      off: this.context.host.subscribe((commit) => {
        if (this.context.fromRemote(commit.origin)) return
        for (const entry of commit.entries) {
          if (changed.size >= MAX_CHANGED_NAMES) unasked.overflow = true
          else changed.add(entry.name)
        }
      }),
    }
    return unasked
  }

  /** The names to answer for a WANT: those it lists, and `unasked` ones; undefined: every name. */
  private namesToAnswer(message: WantMessage, unasked: Unasked, set: ItemSet): HostedName[] | undefined {
    if (unasked.overflow) return undefined
    const wanted = new Set<string>([...message.entries.map((entry) => entry.name), ...message.lacking, ...unasked.push, ...unasked.changed])
    const names: HostedName[] = []
    for (const name of wanted) {
      const type: ReplicaType | undefined = set.typeOf(name) ?? this.context.host.typeOf(name)
      if (type) names.push({ name, type })
    }
    return names
  }

  private sendRanges(id: number, role: RangesMessage['role'], ranges: Range[]): void {
    this.rounds++
    this.context.send({ type: 'ranges', id, role, ranges })
  }

  /** A RANGES of the remote: a round of ours (it is the responder) or of its own reconciliation. */
  async onRanges(message: RangesMessage): Promise<void> {
    if (message.role === 'responder') return this.onReply(message)
    let responding = this.responding
    if (!responding || responding.id !== message.id) {
      if (!this.context.admit()) {
        this.context.dropped()
        return
      }
      this.endResponding()
      const unasked = this.track()
      const state: Responding = { unasked, id: message.id, set: undefined as unknown as ItemSet, lacking: new Set(), rounds: 0 }
      this.responding = state
      try {
        ;(state as { set: ItemSet }).set = await collectItems(this.context.host, this.context.remoteFilter(), this.context.mayRead)
      } catch (error) {
        this.endResponding()
        this.context.fail(`could not list names: ${(error as Error)?.message ?? String(error)}`)
        return
      }
      if (this.responding !== state) return
      responding = state
    }
    if (++responding.rounds > MAX_ROUNDS) {
      this.context.dropped()
      return
    }
    const outcome = answerRanges(responding.set, message.ranges, 'responder')
    for (const name of outcome.weOnly) responding.unasked.push.add(name)
    for (const name of outcome.theyOnly) responding.lacking.add(name)
    this.sendRanges(message.id, 'responder', outcome.reply)
  }

  /** The remote's answer to a round of ours. */
  private async onReply(message: RangesMessage): Promise<void> {
    const initiating = this.initiating
    if (!initiating || initiating.id !== message.id) return // an older reconciliation's
    const outcome = answerRanges(initiating.set, message.ranges, 'initiator')
    for (const name of outcome.differ) initiating.differ.add(name)
    for (const name of outcome.theyOnly) initiating.lacking.add(name)
    for (const name of outcome.weOnly) initiating.unasked.push.add(name)
    if (settled(outcome.reply)) {
      this.initiating = undefined
      await this.sendWant(initiating)
      if (this.context.mutual()) {
        this.endAwaiting()
        this.awaiting = initiating // until the WANT back
      } else initiating.unasked.off()
      return
    }
    if (++initiating.rounds > MAX_ROUNDS) {
      this.endInitiating()
      this.context.fallback()
      return
    }
    this.sendRanges(message.id, 'initiator', outcome.reply)
  }

  /** Ends our reconciliation: the names that differ, with our versions (read held, in slices), and those we lack. */
  private async sendWant(initiating: Initiating): Promise<void> {
    const { host } = this.context
    const entries: VersionEntry[] = []
    const lacking = [...initiating.lacking]
    const differ = [...initiating.differ]
    for (let start = 0; start < differ.length; start += SLICE_NAMES) {
      if (start > 0 && host.yieldTurn) await host.yieldTurn()
      const slice = differ.slice(start, start + SLICE_NAMES)
      const release = host.hold ? await host.hold(slice) : undefined
      try {
        for (const name of slice) {
          const type = initiating.set.typeOf(name)
          if (!type) continue
          try {
            entries.push({ name, replicaType: type, version: host.version(name) })
          } catch {
            lacking.push(name) // gone or unreadable here since: ask for it whole
          }
        }
      } finally {
        release?.()
      }
    }
    this.context.send({ type: 'want', id: initiating.id, from: 'initiator', entries, lacking })
  }

  /** Our versions of `names` we hold (read held, in slices), for a WANT back. */
  private async versionsOf(names: readonly string[], set: ItemSet): Promise<VersionEntry[]> {
    const { host } = this.context
    const entries: VersionEntry[] = []
    for (let start = 0; start < names.length; start += SLICE_NAMES) {
      if (start > 0 && host.yieldTurn) await host.yieldTurn()
      const slice = names.slice(start, start + SLICE_NAMES).filter((name) => set.indexOf(name) >= 0)
      const release = host.hold ? await host.hold(slice) : undefined
      try {
        for (const name of slice) {
          try {
            entries.push({ name, replicaType: set.typeOf(name)!, version: host.version(name) })
          } catch {
            // gone or unreadable here since: nothing to ask for
          }
        }
      } finally {
        release?.()
      }
    }
    return entries
  }

  /**
   * A WANT: the remote ends its reconciliation (answer what it lacks; in a
   * mutual one, then send our WANT back), or sends the WANT back of ours
   * (answer it). A WANT of another reconciliation than the current one is
   * ignored (the remote retries).
   */
  async onWant(message: WantMessage): Promise<void> {
    if (message.from === 'responder') {
      const awaiting = this.awaiting
      if (!awaiting || awaiting.id !== message.id) return
      this.endAwaiting()
      await this.context.answer(this.namesToAnswer(message, awaiting.unasked, awaiting.set), message.entries)
      return
    }
    const responding = this.responding
    if (!responding || responding.id !== message.id) return
    this.endResponding()
    await this.context.answer(this.namesToAnswer(message, responding.unasked, responding.set), message.entries)
    if (this.context.mutual()) {
      const back = await this.versionsOf(
        message.entries.map((entry) => entry.name),
        responding.set,
      )
      this.context.send({ type: 'want', id: message.id, from: 'responder', entries: back, lacking: [...responding.lacking] })
    }
  }

  private endResponding(): void {
    this.responding?.unasked.off()
    this.responding = undefined
  }

  private endInitiating(): void {
    this.initiating?.unasked.off()
    this.initiating = undefined
  }

  private endAwaiting(): void {
    this.awaiting?.unasked.off()
    this.awaiting = undefined
  }

  /** The session ended. */
  close(): void {
    this.endResponding()
    this.endInitiating()
    this.endAwaiting()
  }
}
