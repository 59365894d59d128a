/**
 * How a peer's sync host applies remote commits through its store: the
 * author the log records for each (its claimed provenance, or the remote
 * peer it came through), entries of names damaged here or of types this
 * peer cannot hold left out, the rest committed all or none; and how the
 * records of a unit the store committed go out as commits again, one per
 * run of one provenance.
 */
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import { type EncodedProvenance, metaOf, type Provenance as ChangeProvenance } from '../crdt/provenance.ts'
import type { HlcTimestamp } from '../crdt/hlc.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import type { Store } from '../persistence/store.ts'
import type { CommittedUnitRecord } from '../persistence/store-types.ts'
import type { HostApplyResult } from '../sync/index.ts'
import type { DeltaEntry } from '../sync/messages.ts'
import type { StoreSyncHostOptions } from './store-sync-host.ts'

/** A remote commit's entry, with its commit's author when several commits are applied as one unit (applyRemoteGroup). */
export type OwnedEntry = DeltaEntry & { readonly provenance?: LoggedProvenance }

/** A remote commit's author and provenance as the store logs it (see {@link RemoteApply.loggedProvenance}). */
export type LoggedProvenance = ChangeProvenance & { readonly authored?: HlcTimestamp | undefined; readonly claimed?: boolean }

type ApplyResultOfStore = Awaited<ReturnType<Store['commit']>>[number]

/** What {@link RemoteApply} needs of its host. */
export interface RemoteApplyContext {
  /** The store, `prepareType` and `onUnsupported`. */
  readonly options: Pick<StoreSyncHostOptions, 'store' | 'prepareType' | 'onUnsupported'>
  /** Names whose data is corrupt here: left out of remote commits. */
  readonly unreadable: ReadonlySet<string>
  /** The store's replica of `name`, or undefined (reported once) when its data is corrupt. */
  hydrate(name: string, type: ReplicaType): Promise<Replica | undefined>
}

/** @internal remote commits applied through the store, for `StoreSyncHost` (see the module comment). */
export class RemoteApply {
  /** Names left out of remote commits because their type cannot be held here (reported once each). */
  private readonly unsupported = new Set<string>()

  constructor(private readonly context: RemoteApplyContext) {}

  /**
   * What the log records of a remote commit's author: the author its
   * provenance names (then `claimed`: the store checks the author's
   * signature, persistence/signing.ts), else the remote peer of the session
   * it came through. A remote that cannot carry signatures claiming an
   * author whose key is known is not believed.
   */
  loggedProvenance(claimed: (EncodedProvenance & { readonly signable?: boolean }) | undefined, origin: unknown): LoggedProvenance {
    const believed = claimed?.signable === false && this.context.options.store.authorKeyOf(claimed.agent ?? '') !== undefined ? undefined : claimed
    return {
      agent: believed?.agent ?? (origin as { remoteAgentId?: string } | undefined)?.remoteAgentId,
      message: believed?.message,
      meta: metaOf(believed?.metaJson),
      authored: believed?.authored,
      claimed: believed !== undefined,
    }
  }

  /** Applies `entries` in one store commit under `logged` (the entries' own provenance first), leaving out damaged names and types this peer cannot hold. */
  async applyNow(
    entries: readonly OwnedEntry[],
    origin: unknown,
    applied: (() => void) | undefined,
    logged: LoggedProvenance,
    independent: boolean,
  ): Promise<HostApplyResult> {
    const provenance: LoggedProvenance & { independent?: boolean } = independent ? { ...logged, independent } : logged
    let applying = entries.filter((entry) => !this.context.unreadable.has(entry.name))
    if (this.context.options.prepareType) applying = await this.holdable(applying)
    let results: ApplyResultOfStore[]
    try {
      results = await this.commitThroughStore(applying, origin, provenance, applied)
    } catch (error) {
      if (!isConcordError(error, ErrorCodes.CORRUPT_RECORD)) throw error
      // Which names are damaged: they fail to hydrate (the healthy ones are hydrated by the commit anyway).
      const damaged = new Set<string>()
      for (const entry of applying) if ((await this.context.hydrate(entry.name, entry.replicaType)) === undefined) damaged.add(entry.name)
      if (damaged.size === 0) throw error
      applying = applying.filter((entry) => !damaged.has(entry.name))
      results = await this.commitThroughStore(applying, origin, provenance, applied)
    }
    const changed: string[] = []
    for (const [i, entry] of applying.entries()) if (results[i].changed) changed.push(entry.name)
    return { changed }
  }

  /** The entries whose type this peer can hold, once each type is ready; the others are reported once per name. */
  private async holdable(entries: readonly DeltaEntry[]): Promise<DeltaEntry[]> {
    const { options } = this.context
    const reasons = new Map<ReplicaType, string | undefined>()
    for (const entry of entries) {
      if (!reasons.has(entry.replicaType)) reasons.set(entry.replicaType, await options.prepareType!(entry.replicaType))
    }
    return entries.filter((entry) => {
      const reason = reasons.get(entry.replicaType)
      if (reason === undefined) return true
      if (!this.unsupported.has(entry.name)) {
        this.unsupported.add(entry.name)
        options.onUnsupported?.(entry.name, new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${entry.name}" is left out of sync: ${reason}`))
      }
      return false
    })
  }

  private commitThroughStore(
    entries: readonly OwnedEntry[],
    origin: unknown,
    provenance: LoggedProvenance & { readonly independent?: boolean },
    applied: (() => void) | undefined,
  ): Promise<ApplyResultOfStore[]> {
    if (entries.length === 0) {
      applied?.()
      return Promise.resolve([])
    }
    return this.context.options.store.commit(
      entries.map((entry) => ({
        name: entry.name,
        delta: entry.delta,
        type: entry.replicaType,
        signature: entry.signature,
        ...(entry.provenance ? { provenance: entry.provenance } : {}),
      })),
      { origin, applied, ...provenance },
    )
  }
}

/**
 * A unit's records as the commits they go out as: one, unless some of its
 * changes name another author or message (updates that waited for a
 * dependency, logged as they came when a delta let them in): each run of
 * changes of one provenance is then its own commit, so that each keeps its
 * author and its signatures verify. A `state` record goes with the changes
 * after it.
 */
export function provenanceRuns(records: readonly CommittedUnitRecord[]): CommittedUnitRecord[][] {
  if (records.length <= 1) return [records as CommittedUnitRecord[]]
  const runs: CommittedUnitRecord[][] = []
  let current: CommittedUnitRecord[] = []
  let first: CommittedUnitRecord | undefined
  for (const record of records) {
    if (record.kind === 'delta') {
      if (first !== undefined && !sameProvenance(first, record)) {
        runs.push(current)
        current = []
      }
      first = record
    }
    current.push(record)
  }
  if (current.length > 0) runs.push(current)
  return runs
}

/** Whether two records may share a commit's PROVENANCE: one author, message and meta; signed both or neither, and then one authored time (a signature covers it). */
function sameProvenance(a: CommittedUnitRecord, b: CommittedUnitRecord): boolean {
  if (a.agent !== b.agent || a.message !== b.message || a.metaJson !== b.metaJson) return false
  if (a.signature === undefined || b.signature === undefined) return a.signature === b.signature
  return a.authored?.wall === b.authored?.wall && a.authored?.logical === b.authored?.logical
}
