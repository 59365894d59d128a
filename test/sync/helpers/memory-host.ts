/**
 * A {@link SyncHost} over in-memory replicas, for sync tests (the peer
 * implements the same interface over its store), with real replicas of
 * every type from crdt/registry.ts.
 */
import { Emitter } from '../../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../../crdt/errors.ts'
import { NATIVE_TYPES as CATALOG_NATIVE_TYPES, KNOWN_TYPES } from '../../../crdt/catalog.ts'
import { createReplica } from '../../../crdt/registry.ts'
import type { Replica, ReplicaType } from '../../../crdt/replica.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import { AutomergeReplica, YjsReplica } from '../../../crdt/documents/index.ts'
import type { ORMapReplica } from '../../../crdt/types/index.ts'
import { provesSecret, type PresentedCredentials } from '../../../sync/credentials.ts'
import type { Access, HostApplyResult, LocalCommit, HostedName, SyncHost } from '../../../sync/host.ts'
import type { DeltaEntry } from '../../../sync/messages.ts'
import { ItemIndex } from '../../../sync/item-index.ts'
import type { ItemSet } from '../../../sync/reconcile.ts'
import type { AgentId } from '../../../crdt/agent-id.ts'
import type { Prng } from '../../../transports/memory/prng.ts'

export const NATIVE_TYPES: ReplicaType[] = [...CATALOG_NATIVE_TYPES]
export const ALL_TYPES: ReplicaType[] = [...KNOWN_TYPES]

/** Creates an empty replica of `type`. */
export function makeReplica(type: ReplicaType, owner: string, snapshot?: Uint8Array): Replica {
  return createReplica(type, { agentId: agentId(owner), snapshot })
}

/** Makes one random local change to `replica` (always a change: only existing keys are deleted; maps also get nested values); shared by the sync and peer convergence suites. */
export function mutate(replica: Replica, random: Prng, tag: string): void {
  if (replica instanceof YjsReplica) {
    const text = replica.doc.getText('t')
    if (text.length > 0 && random.chance(0.3)) text.delete(random.int(0, text.length - 1), 1)
    else text.insert(random.int(0, text.length), tag)
    return
  }
  if (replica instanceof AutomergeReplica) {
    const key = `k${random.int(0, 4)}`
    ;(replica as AutomergeReplica<Record<string, unknown>>).change((doc) => {
      if (random.chance(0.3) && key in doc) delete doc[key]
      else doc[key] = { tag, n: random.int(0, 100) }
    })
    return
  }
  const r = replica as unknown as Record<string, (...args: unknown[]) => unknown>
  const value = replica.value()
  switch (replica.type) {
    case 'gcounter':
      r.increment(random.int(1, 3))
      return
    case 'pncounter':
      if (random.chance(0.4)) r.decrement(random.int(1, 3))
      else r.increment(random.int(1, 3))
      return
    case 'gset':
      r.add(tag)
      return
    case 'orset': {
      const elements = Array.isArray(value) ? value : []
      if (elements.length > 0 && random.chance(0.3)) r.delete(random.pick(elements))
      else r.add(random.chance(0.5) ? tag : { tag, n: random.int(0, 3) })
      return
    }
    case 'lww-register':
    case 'mv-register':
      r.set(random.chance(0.5) ? tag : { tag, list: [random.int(0, 9)] })
      return
    case 'ewflag':
      if (random.chance(0.5)) r.enable()
      else r.disable()
      return
    case 'ormap': {
      const map = replica as ORMapReplica
      const keys = map.keys()
      const choice = random.int(0, 6)
      if (keys.length > 0 && choice === 0) map.delete(random.pick(keys))
      else if (choice === 1) map.set(`k${random.int(0, 3)}`, tag)
      else if (choice === 2) map.counter('hits').increment(random.int(1, 5))
      else if (choice === 3) map.orset<string>('tags').add(tag)
      else if (choice === 4) map.map('nested').set(`f${random.int(0, 2)}`, tag)
      else if (choice === 5) map.map('nested').counter('n').increment()
      else map.flag('on').enable()
      return
    }
  }
  throw new Error(`mutate: no test mutation for ${replica.type}`)
}

export interface MemoryHostOptions {
  /** The secret every remote must prove it holds (default: anyone accepted). */
  readonly token?: string
  /** Access rule (default: everyone may write everything). */
  readonly access?: (peer: AgentId, name: string) => Access
  /** Called before a remote commit is "persisted" (tests use it to delay or fail). */
  readonly persist?: (entries: readonly DeltaEntry[]) => Promise<void>
  /** false: no item index (`items`), reconciliations list and read every name as a host without one does. */
  readonly itemIndex?: boolean
}

/** An in-memory host: replicas by name, local commits announced to sessions. */
export class MemoryHost implements SyncHost {
  readonly replicas = new Map<string, Replica>()
  private readonly commits = new Emitter<{ commit: LocalCommit }>()
  private batch: DeltaEntry[] | undefined
  /** Remote commits applied (for assertions). */
  applied = 0
  /** The item set reconciliations read (sync/item-index.ts), kept as names change; `itemIndex: false` leaves it out. */
  readonly itemIndex: ItemIndex = new ItemIndex({
    list: () => this.list(),
    listedType: (name) => this.replicas.get(name)?.type,
    version: (name) => this.version(name),
    deltaSince: (name, version) => this.deltaSince(name, version),
  })

  constructor(
    readonly id: string,
    private readonly options: MemoryHostOptions = {},
  ) {
    if (options.itemIndex === false) this.items = undefined
  }

  /** The item set of every name now (see {@link itemIndex}). */
  items: (() => Promise<ItemSet>) | undefined = () => this.itemIndex.snapshot()

  /** Opens (creating if needed) a name as `type`. */
  open(name: string, type: ReplicaType): Replica {
    let replica = this.replicas.get(name)
    if (replica) {
      if (replica.type !== type) throw new ConcordError(ErrorCodes.TYPE_MISMATCH, `${name} is a ${replica.type}`)
      return replica
    }
    replica = makeReplica(type, this.id)
    this.adopt(name, replica)
    return replica
  }

  private adopt(name: string, replica: Replica): void {
    this.replicas.set(name, replica)
    this.itemIndex.touch(name)
    replica.events.on('change', (event) => {
      this.itemIndex.touch(name)
      if (!event.local) return
      const entry: DeltaEntry = { name, replicaType: replica.type, delta: event.delta }
      if (this.batch) this.batch.push(entry)
      else this.commits.emit('commit', { entries: [entry] })
    })
  }

  /** Forgets `name` (as a store's delete does): no longer listed. */
  drop(name: string): void {
    if (this.replicas.delete(name)) this.itemIndex.touch(name)
  }

  /** Runs `fn`; the local changes it makes are one commit. */
  transact(fn: () => void): void {
    this.batch = []
    try {
      fn()
    } finally {
      const entries = this.batch
      this.batch = undefined
      if (entries.length > 0) this.commits.emit('commit', { entries })
    }
  }

  /** Plain values of every name, for convergence checks. */
  values(): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const name of [...this.replicas.keys()].sort()) out[name] = this.replicas.get(name)!.value()
    return out
  }

  list(): HostedName[] {
    return [...this.replicas].map(([name, replica]) => ({ name, type: replica.type }))
  }

  typeOf(name: string): ReplicaType | undefined {
    return this.replicas.get(name)?.type
  }

  version(name: string): Uint8Array {
    return this.replicas.get(name)!.version()
  }

  deltaSince(name: string, version: Uint8Array | null): Uint8Array | null {
    const replica = this.replicas.get(name)
    if (!replica) return null
    return replica.deltaSince(version ?? makeReplica(replica.type, this.id).version())
  }

  async applyRemote(entries: readonly DeltaEntry[], origin: unknown): Promise<HostApplyResult> {
    // All or none: check every entry on a scratch copy before touching anything.
    if (entries.length > 1) {
      for (const entry of entries) {
        const current = this.replicas.get(entry.name)
        if (current && current.type !== entry.replicaType) throw new ConcordError(ErrorCodes.TYPE_MISMATCH, `${entry.name} is a ${current.type}`)
        const scratch = current ? makeReplica(current.type, this.id, current.snapshot()) : makeReplica(entry.replicaType, this.id)
        scratch.applyDelta(entry.delta)
      }
    } else {
      const current = this.replicas.get(entries[0].name)
      if (current && current.type !== entries[0].replicaType) throw new ConcordError(ErrorCodes.TYPE_MISMATCH, `${entries[0].name} is a ${current.type}`)
    }
    const fresh = new Map<string, Replica>()
    const changed: DeltaEntry[] = []
    for (const entry of entries) {
      let replica = this.replicas.get(entry.name) ?? fresh.get(entry.name)
      if (!replica) {
        replica = makeReplica(entry.replicaType, this.id)
        fresh.set(entry.name, replica)
      }
      if (replica.applyDelta(entry.delta, origin)) changed.push(entry)
    }
    for (const [name, replica] of fresh) this.adopt(name, replica)
    if (changed.length > 0) await this.options.persist?.(changed)
    this.applied++
    if (changed.length > 0) this.commits.emit('commit', { entries: changed, origin })
    return { changed: changed.map((entry) => entry.name) }
  }

  subscribe(listener: (commit: LocalCommit) => void): () => void {
    return this.commits.on('commit', listener)
  }

  authenticate(_peer: AgentId, presented: PresentedCredentials): boolean {
    return this.options.token === undefined || provesSecret(presented, this.options.token)
  }

  access(peer: AgentId, name: string): Access {
    return this.options.access ? this.options.access(peer, name) : 'write'
  }
}
