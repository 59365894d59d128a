/**
 * The local side of a sync session: what the protocol needs of the peer
 * (replicas, store, access rules). The peer implements it over its store;
 * tests implement it over in-memory replicas.
 */
import type { EncodedProvenance } from '../crdt/provenance.ts'
import type { Unsubscribe } from '../crdt/emitter.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { PresentedCredentials } from './credentials.ts'
import type { DeltaEntry } from './messages.ts'
import type { RecordSignature } from '../crdt/signature.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import type { ItemSet } from './reconcile.ts'

/** What a remote peer may do with one name. */
export type Access = 'none' | 'read' | 'write'

/** A value or a promise of it. */
export type MaybePromise<T> = T | Promise<T>

/** A name and its type, as listed by the host. */
export interface HostedName {
  readonly name: string
  readonly type: ReplicaType
}

/**
 * A commit made on the local side (by the agent, or a remote commit applied
 * here): one or more names' deltas that belong together.
 */
export interface LocalCommit {
  readonly entries: readonly DeltaEntry[]
  /**
   * The `origin` given to {@link SyncHost.applyRemote} when this commit came
   * from a peer (the session it came through), `undefined` for a local one.
   * A session never sends a commit back to the session it came from.
   */
  readonly origin?: unknown
  /**
   * Who made it and why, when it is not simply this peer's own change
   * without a message: sent before the commit to remotes that take
   * provenance (sync/provenance.ts), so relays keep the author.
   */
  readonly provenance?: EncodedProvenance | undefined
}

/** One logged change of a name, as {@link SyncHost.recordsSince} gives it. */
export interface HostRecord {
  readonly delta: Uint8Array
  /** Who made it and why (its author, `authored` time, message, meta). */
  readonly provenance: EncodedProvenance
  /** Its author's signature, when signed. */
  readonly signature?: RecordSignature | undefined
  /** When it was logged here (the host's clock: records of one commit have consecutive times). */
  readonly logged: { readonly wall: number; readonly logical: number }
}

/** The logged changes a remote lacks of one name, oldest first, and the merged state still to send after them. */
export interface HostRecordRun {
  readonly records: readonly HostRecord[]
  /** What of the name's state the records cannot carry (a Yjs delete set), to send as merged state after them. */
  readonly residual?: Uint8Array | undefined
}

/** One commit of a group (see {@link SyncHost.applyRemoteGroup}): its entries and the provenance it came with. */
export interface GroupedCommit {
  readonly entries: readonly DeltaEntry[]
  readonly provenance?: (EncodedProvenance & { readonly signable?: boolean }) | undefined
}

/** Outcome of {@link SyncHost.applyRemote}. */
export interface HostApplyResult {
  /** Names whose state changed (and which were persisted). */
  readonly changed: readonly string[]
}

/**
 * The local side of sync. Synchronous methods must be cheap: they run inside
 * the protocol's message handling.
 */
export interface SyncHost {
  /** Every name held locally, with its type. */
  list(): MaybePromise<Iterable<HostedName>>
  /** Type of a name held locally, or `undefined` if it is unknown here. */
  typeOf(name: string): ReplicaType | undefined
  /**
   * Encoded version of a local name (see `Replica.version`). A host with
   * {@link hold} may refuse a name it does not hold (`CONCORD_NOT_FOUND`):
   * the protocol then leaves the name out.
   */
  version(name: string): Uint8Array
  /**
   * What a replica at `version` lacks of the local name (`null` version:
   * the remote has nothing), or `null` if it lacks nothing. Throws
   * DecodeError for a malformed version, and `CONCORD_NOT_FOUND` as
   * {@link version} does.
   */
  deltaSince(name: string, version: Uint8Array | null): Uint8Array | null
  /**
   * Applies a remote commit all or none: creates unknown names with their
   * type, joins every delta, persists, and resolves once it is durable (per
   * the durability mode). Rejects (with a ConcordError, state unchanged) if
   * any entry is bad. The commits it produces are announced through
   * {@link subscribe} with `origin` set to the given `origin`.
   *
   * A host that can tell calls `applied` once the commit is applied and its
   * write queued, before it is durable (never for a refused commit): the
   * session then takes the next commit while this one is written, and still
   * acknowledges it only once the promise resolves. A host that never calls
   * it is waited for. `provenance`: who made the commit and why as the
   * remote claimed it (checked against the bounds); the sending peer's when
   * absent. Its `signable` is false when the remote cannot carry
   * signatures (it did not announce `signatures`): a claim of an author
   * whose key is known is then not believed, rather than refused (the
   * commit is the sending peer's), so older relays still sync.
   * `options.independent`: the remote said the names never shared a unit
   * there (an INDEPENDENT bundle): applied all or none all the same, but
   * the host need not keep them together later (see {@link joints}).
   */
  applyRemote(
    entries: readonly DeltaEntry[],
    origin: unknown,
    applied?: () => void,
    provenance?: EncodedProvenance & { readonly signable?: boolean },
    options?: { readonly independent?: boolean | undefined },
  ): Promise<HostApplyResult>
  /**
   * Optional: several remote commits of one session, in order, applied as
   * one unit (one write), each logged under its own provenance; all or
   * none, like one {@link applyRemote}. A session uses it for the commits
   * that queued up while it handled one (a refusal is then taken commit by
   * commit through {@link applyRemote}); `applied` as there.
   */
  applyRemoteGroup?(commits: readonly GroupedCommit[], origin: unknown, applied?: () => void): Promise<HostApplyResult>
  /** Announces every local commit (including applied remote ones). */
  subscribe(listener: (commit: LocalCommit) => void): Unsubscribe
  /**
   * Whether what `peer` presented admits it. Called once per handshake.
   * `provesSecret(presented, secretOf(peer))` (sync/credentials.ts) checks
   * it against the secret this side expects of that peer; a host that
   * requires no credentials returns true.
   */
  authenticate(peer: AgentId, presented: PresentedCredentials): MaybePromise<boolean>
  /** What `peer` may do with `name`: `read` (receive) or `write` (also send changes). */
  access(peer: AgentId, name: string): Access
  /**
   * Optional, for hosts that do not keep every name in memory (a store):
   * makes `names` readable synchronously ({@link version},
   * {@link deltaSince}) until the returned function is called, across
   * {@link yieldTurn}s, loading them first if needed. The protocol holds a
   * slice of names at a time, so that an anti-entropy round over many names
   * keeps a slice of them in memory, not all. Names the host cannot read
   * (gone, damaged) are left unheld.
   */
  hold?(names: readonly string[]): MaybePromise<() => void>
  /**
   * Optional, with {@link hold}: what replicas at the given versions lack
   * of local names (as {@link deltaSince}), read without loading the names
   * where the host can (a store reads a name's checkpoint and log): for
   * each name, the delta, null when it lacks nothing, or undefined where
   * the host cannot tell that way: the protocol then holds the name and
   * asks {@link deltaSince}. Never rejects for one name (undefined).
   * An answer to a remote that lacks many names asks it first.
   */
  storedDeltas?(
    wanted: ReadonlyArray<{ readonly name: string; readonly type: ReplicaType; readonly since: Uint8Array | null }>,
  ): Promise<ReadonlyArray<Uint8Array | null | undefined>>
  /**
   * Optional: the state digest of a local name (`crdt/state-digest.ts`)
   * where the host knows it without loading the name (a store keeps it in
   * the name's metadata), or of a name it holds; undefined when unknown: the
   * protocol then holds the name and computes it from {@link version} and
   * {@link deltaSince}.
   */
  digest?(name: string): Uint8Array | undefined
  /**
   * Optional: the sorted item set (name, type, state digest) of every name
   * {@link list} would list, as a host that keeps one as its names change
   * answers it (sync/item-index.ts `ItemIndex.snapshot`): a reconciliation
   * then filters it instead of listing, reading and sorting every name.
   */
  items?(): Promise<ItemSet>
  /**
   * Optional: the logged changes of `name` that a replica at `since`
   * (`null`: an empty one) lacks, given `lack` (what it lacks:
   * {@link deltaSince}), so that an anti-entropy answer carries them with
   * their provenance (sync/PROTOCOL.md "Answers made of records"); at most
   * `maxBytes` of deltas and `maxRecords` records, logged up to `until`
   * (see {@link logClock}). Resolves undefined when
   * the host cannot tell them (trimmed from its log, a type whose records
   * cannot be selected by version, over the limits): the answer then sends
   * `lack`. Never rejects for a name it cannot read (undefined).
   */
  recordsSince?(
    name: string,
    since: Uint8Array | null,
    lack: Uint8Array,
    limits: { readonly maxBytes: number; readonly maxRecords: number; readonly until?: HostRecord['logged'] | undefined },
  ): Promise<HostRecordRun | undefined>
  /**
   * Optional, with {@link recordsSince}: the host's log clock now (records
   * logged later have a later time, and every change applied before the
   * call an earlier one). An answer reads the records logged up to this
   * time (`until`), taken once its deltas are computed, so that the records
   * of every name stop at one instant and a commit of several names is in
   * it whole or not at all.
   */
  logClock?(): HostRecord['logged']
  /**
   * Optional: resolves a test of whether a local name may share a unit
   * with another (a transaction or a remote commit of several names was
   * applied to it, or the host cannot tell), live as units are applied.
   * An answer keeps those names in bundles together and sends the others
   * in small INDEPENDENT bundles, each applied on its own (sync/PROTOCOL.md
   * "Bounded answers"). Without it every name may: the answer bundles
   * them all together.
   */
  joints?(): Promise<(name: string) => boolean>
  /**
   * Optional: lets other work run (a macrotask). A session calls it between
   * slices of an expensive answer, so one peer's anti-entropy never holds
   * the event loop for long; without it the answer is built in one go.
   */
  yieldTurn?(): Promise<void>
}
