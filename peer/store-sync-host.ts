/**
 * The {@link SyncHost} of a peer: the sync protocol's view of the peer's
 * store. Remote commits are applied through the store (validated, logged
 * per the durability mode, all or none); every unit the store commits, local
 * or remote, is announced to the sessions once it is durable, with the
 * session it came from as origin so it is not echoed back.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Replica, ReplicaType } from '../crdt/replica.ts'
import type { Store } from '../persistence/store.ts'
import type { Access, ApplyResult, LocalCommit, NameInfo, PeerId, SyncHost } from '../sync/index.ts'
import type { DeltaEntry } from '../sync/messages.ts'
import type { AccessFunction, AuthOptions, CredentialCheck } from './options.ts'

/** Options of a {@link StoreSyncHost}. */
export interface StoreSyncHostOptions {
  readonly store: Store
  readonly auth?: AuthOptions
  readonly access?: AccessFunction
}

/** Implements the sync protocol's local side over a {@link Store}. */
export class StoreSyncHost implements SyncHost {
  private readonly commits = new Emitter<{ commit: LocalCommit }>()
  private readonly replicas = new Map<string, Replica>()
  private readonly types = new Map<string, ReplicaType>()
  private readonly emptyVersions = new Map<ReplicaType, Uint8Array>()
  private readonly offCommitted: Unsubscribe
  private listed = false

  constructor(private readonly options: StoreSyncHostOptions) {
    this.offCommitted = options.store.events.on('committed', ({ records, origin }) => {
      const entries: DeltaEntry[] = records.map((record) => ({ name: record.name, replicaType: record.type, delta: record.payload }))
      if (entries.length > 0) this.commits.emit('commit', { entries, origin })
    })
  }

  /** Registers a replica the peer opened, so sync can read its version synchronously. */
  track(name: string, replica: Replica): void {
    this.replicas.set(name, replica)
    this.types.set(name, replica.type)
  }

  /** Forgets a name (expired, archived, deleted). */
  untrack(name: string): void {
    this.replicas.delete(name)
    this.types.delete(name)
  }

  /** Stops announcing commits. */
  stop(): void {
    this.offCommitted()
  }

  async list(): Promise<Iterable<NameInfo>> {
    const { store } = this.options
    if (!this.listed) {
      for (const info of await store.names()) if (!info.archived) this.types.set(info.name, info.type)
      this.listed = true
    }
    // Versions are read synchronously by the protocol: hydrate every name first.
    for (const [name, type] of this.types) {
      if (!this.replicas.has(name)) this.replicas.set(name, await store.open(name, type))
    }
    return [...this.types].map(([name, type]) => ({ name, type }))
  }

  typeOf(name: string): ReplicaType | undefined {
    return this.types.get(name)
  }

  version(name: string): Uint8Array {
    return this.replica(name).version()
  }

  deltaSince(name: string, version: Uint8Array | null): Uint8Array | null {
    const replica = this.replica(name)
    return replica.deltaSince(version ?? this.emptyVersion(replica))
  }

  async applyRemote(entries: readonly DeltaEntry[], origin: unknown): Promise<ApplyResult> {
    const { store } = this.options
    // The log records who sent the change: the remote peer of the session it came through.
    const agent = (origin as { remotePeerId?: string } | undefined)?.remotePeerId
    const results = await store.commit(entries.map((entry) => ({ name: entry.name, delta: entry.delta, type: entry.replicaType })), { origin, agent })
    const changed: string[] = []
    for (const [i, entry] of entries.entries()) {
      if (!this.replicas.has(entry.name)) this.track(entry.name, await store.open(entry.name, entry.replicaType))
      if (results[i].changed) changed.push(entry.name)
    }
    return { changed }
  }

  subscribe(listener: (commit: LocalCommit) => void): Unsubscribe {
    return this.commits.on('commit', listener)
  }

  /** Checks the credentials of a peer that connected to this one. */
  authenticate(peer: PeerId, token: string): Promise<boolean> {
    const auth = this.options.auth
    return checkCredentials(auth?.accept ?? auth?.token, peer, token)
  }

  /**
   * This host as seen by sessions this peer dialed: the same in every way
   * but the credential check, which uses `auth.acceptDialed`.
   */
  forDialedSessions(): SyncHost {
    return {
      list: () => this.list(),
      typeOf: (name) => this.typeOf(name),
      version: (name) => this.version(name),
      deltaSince: (name, version) => this.deltaSince(name, version),
      applyRemote: (entries, origin) => this.applyRemote(entries, origin),
      subscribe: (listener) => this.subscribe(listener),
      access: (peer, name) => this.access(peer, name),
      authenticate: (peer, token) => checkCredentials(this.options.auth?.acceptDialed, peer, token),
    }
  }

  access(peer: PeerId, name: string): Access {
    return this.options.access ? this.options.access(peer, name) : 'write'
  }

  private replica(name: string): Replica {
    const replica = this.replicas.get(name)
    if (!replica) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" is not open on this peer`)
    return replica
  }

  private emptyVersion(replica: Replica): Uint8Array {
    let version = this.emptyVersions.get(replica.type)
    if (!version) {
      version = this.options.store.emptyVersion(replica.type)
      this.emptyVersions.set(replica.type, version)
    }
    return version
  }
}

/** Applies a {@link CredentialCheck}; no check accepts everyone. */
async function checkCredentials(check: CredentialCheck | undefined, peer: string, token: string): Promise<boolean> {
  if (check === undefined) return true
  if (typeof check === 'function') return await check(peer, token)
  const expected = typeof check === 'string' ? check : Object.prototype.hasOwnProperty.call(check, peer) ? check[peer] : undefined
  return expected !== undefined && constantTimeEqual(expected, token)
}

/** Compares two secrets in time independent of where they differ (hashes first, so lengths leak nothing). */
function constantTimeEqual(a: string, b: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest()
  return timingSafeEqual(digest(a), digest(b))
}
