/**
 * Admission: the one set of rules every way into a peer passes — Concord
 * sessions over any transport, gossip units, y-websocket clients, and any
 * door added later. For a write it decides, in this order: credentials
 * (once per connection, {@link Admission.authenticate}), access per name
 * (`none` / `read` / `write`), type, limits, validation, and only then does
 * the host apply and persist the unit, all or none ({@link Admission.admit}).
 * For a read, {@link Admission.mayRead} is the one test every path that
 * sends a name uses (listing, versions, answers, live commits, relays): a
 * name a peer may not read is invisible to it, and no refusal says more
 * about a name than the peer could read anyway.
 *
 * Pure: the rules are the host's (credential check, access function, local
 * types) plus the limits given here; storage is the host's `applyRemote`.
 */
import { ErrorCodes, isConcordError, typeMismatchMessage } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { EncodedProvenance } from '../crdt/provenance.ts'
import type { PresentedCredentials } from './credentials.ts'
import type { Access, GroupedCommit, MaybePromise, SyncHost } from './host.ts'
import type { DeltaEntry, ProvenanceMessage } from './messages.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import { ALL_NAMES, isValidName, matchesFilter, type NameFilter } from './names.ts'
import { provenanceOf } from './provenance.ts'

/** Why a write is refused before (or instead of) being applied: the name it is about and a stable error code. */
export interface WriteRefusal {
  readonly name: string
  readonly code: string
  readonly message: string
}

/** Outcome of {@link Admission.admit}: the names whose state changed, or why nothing was applied. */
export type Admitted = { readonly changed: readonly string[] } | { readonly refused: WriteRefusal }

/** Outcome of {@link Admission.openName}: what the peer may do with the name, or why it may not open it. */
export type Opened = { readonly access: 'read' | 'write' } | { readonly refused: WriteRefusal }

/** A credential check: whether what `peer` presented admits it. */
export type CredentialCheck = (peer: AgentId, presented: PresentedCredentials) => MaybePromise<boolean>

/** What the admission uses of the local side: its rules and its store. */
export type AdmissionHost = Pick<SyncHost, 'authenticate' | 'access' | 'typeOf' | 'applyRemote' | 'applyRemoteGroup'>

/** Default of {@link AdmissionOptions.maxUnitBytes}: the largest message a session reassembles. */
export const DEFAULT_MAX_UNIT_BYTES = 64 * 1024 * 1024

/** Options of an {@link Admission}. */
export interface AdmissionOptions {
  /** The names this side takes (default: all); a write outside them is refused. */
  readonly filter?: NameFilter
  /**
   * Whether a party whose identity nothing proved (a gossip subscriber with
   * no session) may read: true only for a peer that requires no credentials
   * and has no access rules (default false).
   */
  readonly anonymousReads?: boolean
  /** Most delta bytes in one unit, whatever door it came through (default 64 MiB). */
  readonly maxUnitBytes?: number
  /** Further limits on a unit, checked after access and type, before validation (e.g. per-document bounds). */
  readonly limits?: (peer: AgentId, entries: readonly DeltaEntry[]) => WriteRefusal | undefined
  /** The type of a stored name, authoritative (default: the host's `typeOf`); used by {@link Admission.openName}. */
  readonly storedType?: (name: string) => MaybePromise<ReplicaType | undefined>
  /** Counters to add to (siblings of one peer share them); default fresh ones. */
  readonly stats?: AdmissionStats
}

/** Counters of an admission. */
export interface AdmissionStats {
  /** Credential checks passed and refused. */
  authenticated: number
  credentialsRefused: number
  /** Units applied (changed state or not). */
  admitted: number
  /** Units refused: no access (or outside this side's names), a type mismatch, over a limit, invalid (did not validate). */
  forbidden: number
  typeMismatch: number
  overLimit: number
  invalid: number
  /** Units refused because a signature did not verify, was not the claimed author's, or was missing (`CONCORD_BAD_SIGNATURE`). */
  badSignatures: number
}

/** Fresh admission counters. */
export function newAdmissionStats(): AdmissionStats {
  return { authenticated: 0, credentialsRefused: 0, admitted: 0, forbidden: 0, typeMismatch: 0, overLimit: 0, invalid: 0, badSignatures: 0 }
}

/** Error codes of a unit refused by validation in the store (not applied), rather than failing to persist. */
export function isRefusedApply(code: string | undefined): boolean {
  return (
    code === ErrorCodes.DECODE_ERROR ||
    code === ErrorCodes.TYPE_MISMATCH ||
    code === ErrorCodes.FORBIDDEN ||
    code === ErrorCodes.INVALID_ARGUMENT ||
    code === ErrorCodes.LIMIT_EXCEEDED ||
    code === ErrorCodes.PROTOCOL_ERROR ||
    code === ErrorCodes.BAD_SIGNATURE
  )
}

/** See the module comment. */
export class Admission {
  /** Counters (shared with the siblings made by {@link withCredentials}). */
  readonly stats: AdmissionStats
  private readonly filter: NameFilter
  private readonly maxUnitBytes: number

  constructor(
    private readonly host: AdmissionHost,
    private readonly options: AdmissionOptions = {},
    private readonly check: CredentialCheck = (peer, presented) => host.authenticate(peer, presented),
  ) {
    this.stats = options.stats ?? newAdmissionStats()
    this.filter = options.filter ?? ALL_NAMES
    this.maxUnitBytes = options.maxUnitBytes ?? DEFAULT_MAX_UNIT_BYTES
  }

  /**
   * The same admission with another credential check (a session's host
   * checks credentials its own way: peers this one dialed, ids bound to
   * libp2p PeerIds); counters are shared.
   */
  withCredentials(check: CredentialCheck): Admission {
    return new Admission(this.host, { ...this.options, stats: this.stats }, check)
  }

  /** Checks what `peer` presented (a proof, a bearer token, nothing). A check that throws refuses. */
  async authenticate(peer: AgentId, presented: PresentedCredentials): Promise<boolean> {
    let ok = false
    try {
      ok = (await this.check(peer, presented)) === true
    } catch {
      ok = false
    }
    if (ok) this.stats.authenticated++
    else this.stats.credentialsRefused++
    return ok
  }

  /** What `peer` may do with `name` (an access function that throws, or answers anything else, means `none`). */
  access(peer: AgentId, name: string): Access {
    let access: unknown
    try {
      access = this.host.access(peer, name)
    } catch {
      return 'none'
    }
    return access === 'read' || access === 'write' ? access : 'none'
  }

  /**
   * Whether `peer` may read `name` (receive it listed, versioned, answered,
   * relayed). `undefined`: a party whose identity nothing proved.
   */
  mayRead(peer: AgentId | undefined, name: string): boolean {
    if (peer === undefined) return this.options.anonymousReads === true
    return this.access(peer, name) !== 'none'
  }

  /** The items `peer` may read, in order (see {@link mayRead}). */
  readable<T extends { readonly name: string }>(peer: AgentId | undefined, items: readonly T[]): T[] {
    return items.filter((item) => this.mayRead(peer, item.name))
  }

  /** Whether this side takes `name` at all (its own names filter). */
  takes(name: string): boolean {
    return matchesFilter(this.filter, name)
  }

  /**
   * Checks a unit from `peer` before it is applied: each name valid and
   * taken by this side, writable by `peer`, of its local type and of one
   * type within the unit; then the limits. Returns the first refusal
   * (counted), or `undefined` if validation and apply may go ahead.
   */
  checkWrite(peer: AgentId, entries: readonly DeltaEntry[]): WriteRefusal | undefined {
    const refusal = this.firstRefusal(peer, entries)
    if (refusal) this.count(refusal.code)
    return refusal
  }

  private firstRefusal(peer: AgentId, entries: readonly DeltaEntry[]): WriteRefusal | undefined {
    // A name may come several times (a transaction that changed it twice: its deltas apply in order), always as one type.
    const seen = new Map<string, string>()
    let bytes = 0
    for (const entry of entries) {
      if (!isValidName(entry.name)) {
        return {
          name: String(entry.name).slice(0, 64),
          code: ErrorCodes.INVALID_ARGUMENT,
          message: 'a name must be a non-empty string of at most 1024 characters',
        }
      }
      if (!this.takes(entry.name)) {
        return { name: entry.name, code: ErrorCodes.FORBIDDEN, message: `"${entry.name}" is outside the requested names` }
      }
      if (this.access(peer, entry.name) !== 'write') {
        return { name: entry.name, code: ErrorCodes.FORBIDDEN, message: `peer "${peer}" may not write "${entry.name}"` }
      }
      const type = seen.get(entry.name)
      if (type !== undefined && type !== entry.replicaType) {
        return { name: entry.name, code: ErrorCodes.PROTOCOL_ERROR, message: `"${entry.name}" as two types in one commit` }
      }
      seen.set(entry.name, entry.replicaType)
      const local = this.host.typeOf(entry.name)
      if (local !== undefined && local !== entry.replicaType) {
        return { name: entry.name, code: ErrorCodes.TYPE_MISMATCH, message: typeMismatchMessage(entry.name, entry.replicaType, local) }
      }
      bytes += entry.delta.byteLength
    }
    if (bytes > this.maxUnitBytes) {
      return { name: entries[0].name, code: ErrorCodes.LIMIT_EXCEEDED, message: `a unit of ${bytes} delta bytes is over the limit of ${this.maxUnitBytes}` }
    }
    return this.options.limits?.(peer, entries)
  }

  /**
   * Admits a unit from `peer`: {@link checkWrite}, its claimed provenance
   * within bounds (`CONCORD_INVALID_ARGUMENT`), then the host validates,
   * applies and persists it all or none (`origin` goes with the commit it
   * makes; `signable`: whether the remote can carry signatures, see
   * `SyncHost.applyRemote`). Resolves with the names that changed, or with the refusal when
   * nothing was applied (refused before, or by validation). Rejects only when
   * a valid unit could not be persisted (a storage failure, a closed store).
   * `applied` is the host's (see `SyncHost.applyRemote`), and so is
   * `independent` (an INDEPENDENT bundle).
   */
  async admit(
    peer: AgentId,
    entries: readonly DeltaEntry[],
    origin: unknown,
    applied?: () => void,
    provenance?: ProvenanceMessage,
    signable = true,
    independent = false,
  ): Promise<Admitted> {
    if (entries.length === 0) return { changed: [] }
    const refusal = this.checkWrite(peer, entries)
    if (refusal) return { refused: refusal }
    let claimed: EncodedProvenance | undefined
    let signed = entries
    if (provenance) {
      try {
        claimed = provenanceOf(provenance)
      } catch (error) {
        this.stats.invalid++
        return { refused: { name: entries[0].name, code: ErrorCodes.INVALID_ARGUMENT, message: `provenance: ${(error as Error).message}` } }
      }
      const signatures = provenance.signatures
      if (signatures !== undefined) {
        // One signature (or none) per entry, in order; the host checks them against the author before applying.
        if (signatures.length !== entries.length) {
          this.stats.badSignatures++
          const message = `provenance: ${signatures.length} signatures for a commit of ${entries.length} entries`
          return { refused: { name: entries[0].name, code: ErrorCodes.BAD_SIGNATURE, message } }
        }
        signed = entries.map((entry, i) => (signatures[i] === undefined ? entry : { ...entry, signature: signatures[i] }))
      }
    }
    try {
      const result = await this.host.applyRemote(
        signed,
        origin,
        applied,
        claimed && (signable ? claimed : { ...claimed, signable }),
        independent ? { independent } : undefined,
      )
      this.stats.admitted++
      return { changed: result.changed }
    } catch (error) {
      const code = isConcordError(error) ? error.code : undefined
      if (!isRefusedApply(code)) throw error
      this.count(code!)
      return { refused: { name: entries[0].name, code: code!, message: (error as Error).message } }
    }
  }

  /**
   * Admits several commits of `peer` as one unit (`SyncHost.applyRemoteGroup`),
   * each under the provenance it came with. Resolves undefined, having
   * applied nothing, when the host has no group path or any of them would be
   * refused (by {@link checkWrite}'s rules, its provenance, validation) or
   * is signed: the caller then admits them one by one with {@link admit},
   * which tells which and counts it. Rejects as {@link admit} does.
   */
  async admitGroup(
    peer: AgentId,
    commits: ReadonlyArray<{ readonly entries: readonly DeltaEntry[]; readonly provenance?: ProvenanceMessage | undefined }>,
    origin: unknown,
    applied: () => void,
    signable: boolean,
  ): Promise<{ readonly changed: readonly string[] } | undefined> {
    const host = this.host
    if (host.applyRemoteGroup === undefined) return undefined
    const group: GroupedCommit[] = []
    for (const { entries, provenance } of commits) {
      if (entries.length === 0 || this.firstRefusal(peer, entries) !== undefined || provenance?.signatures !== undefined) return undefined
      let claimed: EncodedProvenance | undefined
      if (provenance) {
        try {
          claimed = provenanceOf(provenance)
        } catch {
          return undefined
        }
      }
      group.push({ entries, ...(claimed ? { provenance: signable ? claimed : { ...claimed, signable } } : {}) })
    }
    try {
      const result = await host.applyRemoteGroup(group, origin, applied)
      this.stats.admitted += commits.length
      return { changed: result.changed }
    } catch (error) {
      // Refused as a whole (strictly checked: nothing of it applied), or rolled back: one by one tells which.
      if (isRefusedApply(isConcordError(error) ? error.code : undefined)) return undefined
      throw error
    }
  }

  /**
   * Whether `peer` may open `name` as a `type` document of its own (a
   * y-websocket room, an inspector view, an MCP tool), and with what
   * access. A name it may not read is refused as `CONCORD_NOT_FOUND`,
   * exactly as a name that does not exist (it learns nothing); a name that
   * does not exist may be opened only by a writer (it is then created); the
   * type is checked only for a peer that may read the name. With `intent`
   * `write` (a door that changes the name on the peer's behalf), a peer that
   * may only read is refused `CONCORD_FORBIDDEN`, in the words a session's
   * write gets.
   */
  async openName(peer: AgentId, name: string, type: ReplicaType, intent: 'read' | 'write' = 'read'): Promise<Opened> {
    const notFound = (): Opened => {
      this.stats.forbidden++
      return { refused: { name, code: ErrorCodes.NOT_FOUND, message: 'no such name' } }
    }
    if (!isValidName(name) || !this.takes(name)) return notFound()
    const access = this.access(peer, name)
    if (access === 'none') return notFound()
    const stored = await (this.options.storedType ?? ((n: string) => this.host.typeOf(n)))(name)
    if (stored === undefined && access !== 'write') return notFound()
    if (stored !== undefined && stored !== type) {
      this.stats.typeMismatch++
      return { refused: { name, code: ErrorCodes.TYPE_MISMATCH, message: typeMismatchMessage(name, type, stored) } }
    }
    if (intent === 'write' && access !== 'write') {
      this.stats.forbidden++
      return { refused: { name, code: ErrorCodes.FORBIDDEN, message: `peer "${peer}" may not write "${name}"` } }
    }
    return { access }
  }

  private count(code: string): void {
    if (code === ErrorCodes.FORBIDDEN) this.stats.forbidden++
    else if (code === ErrorCodes.TYPE_MISMATCH) this.stats.typeMismatch++
    else if (code === ErrorCodes.LIMIT_EXCEEDED) this.stats.overLimit++
    else if (code === ErrorCodes.BAD_SIGNATURE) this.stats.badSignatures++
    else this.stats.invalid++
  }
}
