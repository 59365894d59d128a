/**
 * Options of {@link createPeer}, with their defaults and validation.
 */
import type { DocumentLimits } from '../crdt/documents/options.ts'
import type { WaitingBudgetLimits } from '../crdt/documents/waiting-room.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Access } from '../sync/host.ts'
import { MAX_AGENT_ID_LENGTH, type AgentId } from '../crdt/agent-id.ts'
import type { NameFilter } from '../sync/names.ts'
import type { CheckpointPolicy, Durability, ReplicaCreator, Retention, Schema } from '../persistence/options.ts'
import type { Storage } from '../persistence/storage/storage.ts'
import type { SessionOptions } from '../sync/session.ts'
import { checkIdentities } from './identity-check.ts'
import { peerSignatureOptions } from './signing-options.ts'
import type { PeerLibp2pOptions } from './libp2p-options.ts'
import type { SigningKey } from './signing-options.ts'

/** Who may do what with a name: `(agentId, name) => 'none' | 'read' | 'write'`. */
export type AccessFunction = (agentId: AgentId, name: string) => Access

/**
 * The secret a remote must prove it holds: one shared secret, a per-peer
 * table (`{ agentId: secret }`), or a lookup `(agentId) => secret` (undefined:
 * an unknown peer, refused). Secrets are proved by a challenge-response
 * (sync/PROTOCOL.md, "Credentials"); they never travel.
 */
export type CredentialCheck = string | Readonly<Record<string, string>> | ((agentId: string) => string | undefined | Promise<string | undefined>)

/** Credentials: what this peer proves, and what it accepts. */
export interface AuthOptions {
  /** The secret this peer proves in every handshake (it never travels, nor goes in a URL). */
  readonly token?: string | undefined
  /**
   * What peers that connect to this one must prove. Default: the shared
   * secret `token` when one is set, otherwise anyone is accepted.
   */
  readonly accept?: CredentialCheck | undefined
  /**
   * What peers this one connects to must prove (default: anyone; the
   * address the agent dialed names them, and TLS can prove it).
   */
  readonly acceptDialed?: CredentialCheck | undefined
  /**
   * Speak protocol 1's bearer tokens too: send `token` in the clear in HELLO
   * (a protocol-1 remote checks it there) and accept a protocol-1 remote's
   * clear token. Default false: a clear token is replayable by anyone who
   * sees it. For a migration from protocol 1, over `wss://` only.
   */
  readonly legacyBearer?: boolean | undefined
  /**
   * Trust the id a peer claims although no per-peer credential proves it.
   * `createPeer` refuses an `access` function with credentials that cannot
   * tell peers apart (none, or one shared secret), since any peer could then
   * claim another's id and get its access; set this only when `access` does
   * not depend on the agent id.
   */
  readonly trustClaimedIds?: boolean | undefined
}

/** Options of {@link createPeer}. */
export interface PeerOptions {
  /**
   * The agent id: stable, persisted with the data (the store's owner), the
   * author (`agent`) of every record this peer writes, and the id it claims
   * in the sync handshake. Required (or the deprecated {@link id}).
   */
  readonly agentId?: string | undefined
  /**
   * @deprecated Use {@link agentId} (the same id); accepted for one release.
   * Both given and different: `CONCORD_INVALID_ARGUMENT`.
   */
  readonly id?: string | undefined
  /** LevelDB folder; omitted -> an in-memory store. */
  readonly dir?: string | undefined
  /** `sync` (default; RPO 0) or `async` with `rpoMs`. */
  readonly durability?: Durability | undefined
  /** Which local changes merge while they wait to be written: of every name (`'all'`, default) or of `async` names only (see `StoreOptions.mergeLocal`). */
  readonly mergeLocal?: 'async' | 'all' | undefined
  /** Checkpoint policy of every name (see persistence/). */
  readonly checkpoint?: CheckpointPolicy | undefined
  /** Retention of every name (default `'full'`: every record is kept; see `Retention`). */
  readonly retention?: Retention | undefined
  /** Time to live of untouched names, ms. */
  readonly ttlMs?: number | undefined
  /** Archive names untouched for this long, ms. */
  readonly archiveAfterMs?: number | undefined
  /** Application schema and migrations, applied on hydration. */
  readonly schema?: Schema | undefined
  /** Names kept hydrated in memory by the store (default 1000). */
  readonly cacheSize?: number | undefined
  /** Credentials (default: none required, none presented). */
  readonly auth?: AuthOptions | undefined
  /** Per-name access of remote peers (default: everyone may write everything). */
  readonly access?: AccessFunction | undefined
  /** The names this peer syncs (default: all). */
  readonly names?: NameFilter | undefined
  /**
   * libp2p defaults (`bootstrap`, `mdns`, `allow`, `gossipsub`, ...), used when
   * `listen({ libp2p })` or `connect(multiaddr)` starts the node; see
   * README, "libp2p".
   */
  readonly libp2p?: PeerLibp2pOptions | undefined
  /**
   * Limits on the Yjs and Automerge deltas remote peers send (bytes,
   * decoded operations and content, updates waiting for a dependency);
   * see README, "Sync and security", for the defaults.
   */
  readonly documentLimits?: Partial<DocumentLimits> | undefined
  /**
   * Delta bytes from which a remote commit is heavy: heavy commits are
   * applied one at a time, each after a macrotask turn, so that the small
   * commits other sessions already sent go first (default 64 KiB; 0: off).
   */
  readonly heavyApplyBytes?: number | undefined
  /**
   * Document updates waiting for a missing dependency, per sending peer over
   * every name (default 4,000 updates and 32 MiB); beyond, dropped and
   * counted (`stats().waiting`), sent again by anti-entropy.
   */
  readonly waitingBudget?: Partial<WaitingBudgetLimits> | undefined
  /** Largest sync frame, bytes (default 1 MiB; larger messages are chunked). */
  readonly maxFrameBytes?: number | undefined
  /**
   * A storage engine of your own instead of `dir` (an adapter that passes
   * `runStorageTests` of concord-crdt/testing, or a memory-level kept across a
   * simulated restart). The peer does not close it.
   */
  readonly storage?: Storage | undefined
  /** Tuning of every sync session: timeouts, periodic anti-entropy, window, and its clock (`now`). */
  readonly sync?: SyncTuning | undefined
  /** Aborts `createPeer` while it opens the store. */
  readonly signal?: AbortSignal | undefined
  /**
   * The Ed25519 key this peer signs the provenance of its own records with
   * (README, "History": signed provenance): a libp2p `PrivateKey` of type
   * Ed25519, or its 32-byte seed. Default: `libp2p.privateKey` when it is
   * given and Ed25519; otherwise records are unsigned. An `id` that is an
   * Ed25519 PeerId (`12D3KooW...`) must be this key's.
   */
  readonly signingKey?: SigningKey | undefined
  /**
   * Public keys of authors, `{ authorId: PeerId }` (the PeerId of an Ed25519
   * key, `12D3KooW...`; `libp2p.identities` count too): a change that claims
   * a listed author must be signed by that key, or it is refused
   * (`CONCORD_BAD_SIGNATURE`). An author id that is itself an Ed25519 PeerId
   * needs no entry.
   */
  readonly authorKeys?: Readonly<Record<string, string>> | undefined
  /**
   * Refuse remote changes whose claimed author nothing proves: unsigned, or
   * signed by a key no rule above binds to the author (default false).
   * Anti-entropy answers name no author (they are logged under the peer
   * that sent them) and are taken either way.
   */
  readonly requireSignatures?: boolean | undefined
}

/**
 * The test hooks of a peer: what a test or a simulation sets and a user
 * does not. Only `createTestPeer` (concord-crdt/testing) takes them; `createPeer`
 * refuses them (`CONCORD_INVALID_ARGUMENT`).
 */
export interface PeerTestHooks {
  /** Creates replicas (default: the crdt registry); tests fix Yjs client ids and Automerge actors with it. */
  readonly createReplica?: ReplicaCreator | undefined
  /**
   * Period of the sync sessions' tick (handshake timeout, resync retries),
   * ms (default 500). 0: no timer; call `peer.tick()` (a simulation drives
   * it in virtual time).
   */
  readonly tickMs?: number | undefined
  /** Wall clock, ms (the store's times, presence expiry; a simulation's virtual time). */
  readonly now?: (() => number) | undefined
}

/** The names of {@link PeerTestHooks}, which `createPeer` refuses. */
export const PEER_TEST_HOOKS: ReadonlyArray<keyof PeerTestHooks> = ['createReplica', 'tickMs', 'now']

/** @internal What a peer is built from: its user's options and, through `createTestPeer`, the test hooks. */
export type PeerSetup = PeerOptions & PeerTestHooks

/** Refuses the test hooks in a user's options (they belong to `createTestPeer`). */
export function refuseTestHooks(options: PeerOptions, door: string): void {
  if (options === null || typeof options !== 'object') return
  for (const hook of PEER_TEST_HOOKS) {
    if ((options as PeerSetup)[hook] !== undefined) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${door}: ${hook} is a test hook; use createTestPeer from concord-crdt/testing`)
    }
  }
}

/** The session options a peer lets its user tune (see `SessionOptions` in sync/session.ts). */
export type SyncTuning = Pick<
  SessionOptions,
  | 'handshakeTimeoutMs'
  | 'resyncTimeoutMs'
  | 'antiEntropyIntervalMs'
  | 'window'
  | 'maxQueuedCommits'
  | 'maxMalformed'
  | 'ackEvery'
  | 'ackDelayMs'
  | 'rateLimit'
  | 'now'
  | 'maxHelloBytes'
  | 'maxInboxBytes'
  | 'maxReassemblyBytes'
  | 'maxMessageBytes'
  | 'requestRate'
  | 'presence'
  | 'provenance'
  | 'signatures'
  | 'answerRecords'
  | 'reconcile'
  | 'independent'
>

/** @internal A peer's set-up once its agent id is resolved (from `agentId`, or the deprecated `id`). */
export type ResolvedPeerSetup = PeerSetup & { readonly agentId: string }

/**
 * The agent id of a peer's options: `agentId`, or the deprecated `id`.
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT` when neither is given, both
 * are and differ, or the id is not a non-empty string of at most 256 characters.
 */
export function resolveAgentId(options: PeerOptions): string {
  const { agentId, id } = options
  if (agentId !== undefined && id !== undefined && agentId !== id) {
    throw new ConcordError(
      ErrorCodes.INVALID_ARGUMENT,
      `createPeer: agentId "${agentId}" and id "${id}" differ (id is the deprecated name of agentId: give only agentId)`,
    )
  }
  const resolved = agentId ?? id
  if (resolved === undefined) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer needs an agentId')
  if (typeof resolved !== 'string' || resolved.length === 0 || resolved.length > MAX_AGENT_ID_LENGTH) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `createPeer: agentId must be a non-empty string of at most ${MAX_AGENT_ID_LENGTH} characters`)
  }
  return resolved
}

/**
 * Checks the options a user can get wrong, with a clear error, and returns
 * them with the agent id resolved.
 */
export function validatePeerOptions<T extends PeerSetup>(options: T): T & { readonly agentId: string } {
  if (options === null || typeof options !== 'object') {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer needs an options object with at least an agentId')
  }
  const agentId = resolveAgentId(options)
  const durability = options.durability
  if (durability !== undefined) {
    const ok = durability.mode === 'sync' || (durability.mode === 'async' && Number.isFinite(durability.rpoMs) && durability.rpoMs > 0)
    if (!ok) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, "createPeer: durability must be { mode: 'sync' } or { mode: 'async', rpoMs > 0 }")
  }
  if (options.tickMs !== undefined && !(Number.isFinite(options.tickMs) && options.tickMs >= 0)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: tickMs must be a number >= 0')
  }
  if (options.dir !== undefined && options.storage !== undefined) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: give either dir or storage, not both')
  }
  if (options.dir !== undefined && (typeof options.dir !== 'string' || options.dir.length === 0)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: dir must be a non-empty path')
  }
  if (options.auth !== undefined && (options.auth === null || typeof options.auth !== 'object')) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: auth must be an object { token, accept, acceptDialed, legacyBearer, trustClaimedIds }')
  }
  checkIdentities(options)
  peerSignatureOptions(options)
  return { ...options, agentId }
}
