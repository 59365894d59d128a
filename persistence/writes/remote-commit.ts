/**
 * A commit of deltas made elsewhere (`Store.commit`, `Store.applyRemote`):
 * its input checked, its names' entries found (hydrated, or made at once
 * when known to be absent), its signatures verified before anything is
 * applied, then handed to the write path (writes.ts) as one atomic unit.
 */
import { checkSignatureShape, type RecordSignature } from '../../crdt/signature.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import { type EncodedProvenance, encodeProvenance } from '../../crdt/provenance.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import { checkName } from '../names/check-name.ts'
import type { NameEntry } from '../names/entry.ts'
import type { Names } from '../names/owner.ts'
import { throwIfAborted, type SignalOptions } from '../storage/storage.ts'
import type { ApplyResult, ChangeProvenance } from '../store-types.ts'
import type { Writes } from './writes.ts'

/** Names of one commit hydrated at a time (their storage reads overlap). */
const COMMIT_HYDRATIONS = 32

/** One delta of a remote commit. */
export interface RemoteDelta {
  readonly name: string
  readonly delta: Uint8Array
  /** Needed only when the name does not exist yet. */
  readonly type?: ReplicaType
  readonly signature?: RecordSignature | undefined
  /**
   * This delta's own author and provenance, instead of the call's (one
   * call that logs several remote commits as one unit, each under its
   * author); `claimed` as the call's option.
   */
  readonly provenance?: (ChangeProvenance & { readonly authored?: HlcTimestamp | undefined; readonly claimed?: boolean | undefined }) | undefined
}

/** Options of a remote commit (see `Store.commit`). */
export type RemoteCommitOptions = {
  origin?: unknown
  applied?: () => void
  authored?: HlcTimestamp
  claimed?: boolean
  independent?: boolean
} & ChangeProvenance &
  SignalOptions

/** The author's time of a change made elsewhere: an HLC of safe integers, or undefined. */
function checkAuthored(hlc: HlcTimestamp | undefined): HlcTimestamp | undefined {
  if (hlc === undefined) return undefined
  if (!Number.isSafeInteger(hlc?.wall) || hlc.wall < 0 || !Number.isSafeInteger(hlc.logical) || hlc.logical < 0) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'authored must be an HLC { wall, logical } of non-negative integers')
  }
  return { wall: hlc.wall, logical: hlc.logical }
}

/** @internal the store's intake of remote commits. */
export class RemoteCommits {
  constructor(
    private readonly context: StoreContext,
    private readonly owner: Names,
    private readonly writes: Writes,
  ) {}

  /** See `Store.commit`. */
  async commit(deltas: readonly RemoteDelta[], options: RemoteCommitOptions = {}): Promise<ApplyResult[]> {
    throwIfAborted(options.signal)
    const provenance = { ...encodeProvenance(options), authored: checkAuthored(options.authored) }
    // A delta's own provenance, checked as the call's is (its author defaults to this store's, as the call's does).
    const owns = deltas.map((item) =>
      item.provenance === undefined
        ? undefined
        : { ...encodeProvenance(item.provenance), agent: item.provenance.agent ?? this.context.agentId, authored: checkAuthored(item.provenance.authored) },
    )
    for (const item of deltas) {
      checkName(item.name)
      if (!(item.delta instanceof Uint8Array)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a delta must be a Uint8Array')
      if (item.signature !== undefined) {
        try {
          checkSignatureShape(item.signature)
        } catch (error) {
          throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, (error as Error).message)
        }
      }
    }
    for (;;) {
      // Every name hydrated: applied in this turn, as it was called (a local change made right after goes after it).
      const entries = this.hydratedEntries(deltas) ?? (await this.entriesOf(deltas, options.signal))
      // An entry dropped while others hydrated (a concurrent commit refused it) is hydrated again.
      if (entries.every((entry) => !entry.detached)) {
        try {
          this.checkSignatures(entries, deltas, provenance, owns, options.claimed === true)
        } catch (error) {
          this.owner.forgetUnstored(entries)
          throw error
        }
        // Each delta with its checked provenance (none has one: the call's deltas, whose own field is then unset).
        const logged = owns.some((own) => own !== undefined)
          ? deltas.map((item, i) => ({ name: item.name, delta: item.delta, signature: item.signature, provenance: owns[i] }))
          : (deltas as ReadonlyArray<Omit<RemoteDelta, 'provenance'>>)
        return this.writes.commit(entries, logged, {
          origin: options.origin,
          applied: options.applied,
          independent: options.independent,
          ...provenance,
        })
      }
    }
  }

  /**
   * Checks the signatures of a commit's deltas before any is applied
   * (persistence/signing.ts): each must verify as the change's author's,
   * and when the caller `claimed` the author on a sender's word, an author
   * whose key is known must have signed. `CONCORD_BAD_SIGNATURE` otherwise.
   */
  private checkSignatures(
    entries: readonly NameEntry[],
    deltas: readonly RemoteDelta[],
    unit: EncodedProvenance & { authored?: HlcTimestamp | undefined },
    owns: ReadonlyArray<(EncodedProvenance & { authored?: HlcTimestamp | undefined }) | undefined>,
    unitClaimed: boolean,
  ): void {
    for (const [i, item] of deltas.entries()) {
      const provenance = owns[i] ?? unit
      const claimed = owns[i] !== undefined ? item.provenance?.claimed === true : unitClaimed
      if (item.signature === undefined && !claimed) continue
      const agent = provenance.agent ?? this.context.agentId
      const authored = provenance.authored
      if (item.signature !== undefined && authored === undefined) {
        throw new ConcordError(ErrorCodes.BAD_SIGNATURE, `"${item.name}": a signed change needs the time its author made it (authored)`)
      }
      const fields = {
        name: item.name,
        type: entries[i].type,
        agent,
        authored: authored ?? { wall: 0, logical: 0 },
        message: provenance.message,
        metaJson: provenance.metaJson,
      }
      this.context.signatures.check(fields, item.delta, item.signature, claimed)
    }
  }

  /** The entries of a commit's names when every one is hydrated (a type mismatch throws), else undefined. */
  private hydratedEntries(deltas: ReadonlyArray<{ name: string; type?: ReplicaType }>): NameEntry[] | undefined {
    const entries: NameEntry[] = []
    for (const item of deltas) {
      const entry = this.owner.use(item.name, item.type)
      if (!entry) return undefined
      entries.push(entry)
    }
    return entries
  }

  /**
   * The entries of a commit's names, in order: hydrated ones at once, the
   * others hydrated (or created in memory, stored with the commit's batch)
   * {@link COMMIT_HYDRATIONS} at a time rather than one after the other. On
   * a failure (a type mismatch, a damaged name) nothing is applied and no
   * name it created is left behind; the first failure in order is thrown.
   */
  private async entriesOf(deltas: ReadonlyArray<{ name: string; type?: ReplicaType }>, signal: AbortSignal | undefined): Promise<NameEntry[]> {
    const entries: Array<NameEntry | undefined> = []
    const failures: Array<{ at: number; error: unknown }> = []
    const missing: number[] = []
    for (const [at, item] of deltas.entries()) {
      try {
        // A name the index knows is absent (a first sync's) is made at once, without a hydration of its own.
        const entry = item.type === undefined ? this.owner.use(item.name) : this.owner.useOrCreateAbsent(item.name, item.type, { signal })
        entries.push(entry)
        if (!entry) missing.push(at)
      } catch (error) {
        entries.push(undefined)
        failures.push({ at, error })
        break
      }
    }
    if (failures.length === 0) {
      let next = 0
      const worker = async (): Promise<void> => {
        while (next < missing.length && failures.length === 0) {
          const at = missing[next++]
          const item = deltas[at]
          try {
            entries[at] = await this.owner.entry(item.name, item.type, { signal }, true)
          } catch (error) {
            failures.push({ at, error })
          }
        }
      }
      await Promise.all(Array.from({ length: Math.min(COMMIT_HYDRATIONS, missing.length) }, worker))
    }
    const held = entries.filter((entry): entry is NameEntry => entry !== undefined)
    if (failures.length > 0) {
      // Refused before anything applied: no name it created is left behind.
      this.owner.forgetUnstored(held)
      throw failures.reduce((first, failure) => (failure.at < first.at ? failure : first)).error
    }
    return held
  }
}
