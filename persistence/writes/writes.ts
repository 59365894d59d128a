/**
 * The write path: every change of a hydrated name becomes log records
 * through one commit path, and the records hold exactly the bytes that
 * were applied.
 *
 * - A remote commit (`commit`) checks every delta first (`prepareDelta`:
 *   one decode each, against the store's document limits; strictly when
 *   there are several, so that applying cannot fail halfway), then applies
 *   them and logs what each apply returned (the delta, or its merge with
 *   document updates that waited for it). A refused delta leaves nothing
 *   applied, and no name it would have created.
 * - A local change (a replica's mutator) is logged from the delta its
 *   `change` event carries: one unit of its own (`sync` names), or merged
 *   into the waiting unit of earlier ones (`async` names, local-merge.ts).
 * - An `atomic` block, a migration and a remote commit assemble one unit:
 *   the local changes made while it is being assembled (in the block, in
 *   the migration's steps, in listeners of the deltas it applies) join it,
 *   so that the unit is logged, announced and shipped all or none.
 *
 * The records a unit writes are built in unit-records.ts, a migration's
 * steps run in migration.ts.
 */
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { ChangeEvent, PreparedDelta, Replica, ReplicaType, UndoRecord } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import type { NameEntry } from '../names/entry.ts'
import type { Names } from '../names/owner.ts'
import type { Schema } from '../options.ts'
import type { CommittedRecord, NameState, Unit } from '../pipeline/committer.ts'
import type { ApplyResult } from '../store-types.ts'
import { recordLimit } from './checkpoints.ts'
import type { EncodedProvenance } from '../../crdt/provenance.ts'
import type { RecordSignature } from '../../crdt/signature.ts'
import { bytesEqual } from '../../crdt/codec.ts'
import { LocalMerge } from './local-merge.ts'
import { migrateEntry } from './migration.ts'
import { rollBack } from './rollback.ts'
import { buildAppends, unitRecord } from './unit-records.ts'

/** @internal one change to log: its name, its bytes, when and by whom. */
export interface LogItem {
  readonly entry: NameEntry
  readonly delta: Uint8Array
  readonly hlc: HlcTimestamp
  readonly agent: string
  /** Why (the change's provenance, record format 2). */
  readonly message?: string | undefined
  /** Its application metadata as canonical JSON. */
  readonly metaJson?: string | undefined
  /** When its author made it, for a change made elsewhere. */
  readonly authored?: HlcTimestamp | undefined
  /** Its author's signature, for a remote change that came signed and is logged as it came. */
  readonly signature?: RecordSignature | undefined
  /** A remote delta (`commit`): never signed by this store, whoever it is logged under. */
  readonly remote?: true | undefined
  /** Its provenance is its own, not the unit's (an update that waited for a dependency, logged as it came when let in). */
  readonly own?: true | undefined
}

/** Who sent a document update that may wait for a dependency, kept (weakly, by its bytes) until it is let in. */
interface HeldProvenance extends EncodedProvenance {
  readonly agent: string
  readonly signature?: RecordSignature | undefined
}

/** What an `atomic` block needs to take its changes back if it throws. */
interface BlockUndo {
  /** Per name touched: its undo record (none: the replica cannot undo) and its version before the block. */
  readonly records: Map<NameEntry, { readonly record: UndoRecord | undefined; readonly before: Uint8Array }>
}

/** @internal the store's write path. */
export class Writes {
  /** Who sent each document update that may be waiting for a dependency (by its bytes; forgotten with them). */
  private readonly held = new WeakMap<Uint8Array, HeldProvenance>()
  /** The unit being assembled, if any: local changes made meanwhile join it. */
  private assembling: LogItem[] | undefined
  private readonly merge: LocalMerge
  /** The innermost `atomic` block running, if any. */
  private block: BlockUndo | undefined
  /** A name whose replica's change events are not changes to log (a rollback in progress). */
  private silenced: NameEntry | undefined

  constructor(
    private readonly context: StoreContext,
    private readonly names: Names,
  ) {
    this.merge = new LocalMerge(context, {
      buildAppends: (b, items) => buildAppends(context, b, items),
      enqueueUnit: (unit, entries) => this.enqueueUnit(unit, entries),
      reportFailure: (entries, error) => this.reportFailure(entries, error),
    })
  }

  // ------------------------------------------------------------ wiring

  /** Wires a hydrated entry's replica to the write path: its changes are logged, its mutations guarded. */
  attach(entry: NameEntry): void {
    // The one `change` listener a store adds: a Yjs replica encodes a local run's deltas only when read while
    // its holder is the only listener (yjs-replica.ts), so the digest memo is forgotten here, not by a second one.
    entry.attach((event) => {
      entry.forgetDigest()
      this.onChange(entry, event)
    })
    entry.replica.guard = () => this.guard(entry)
  }

  /**
   * The guard of a hydrated replica ({@link Replica.guard}): refuses local
   * changes of a name the store no longer persists (`CONCORD_CLOSED`), and
   * starts the undo record of a name an `atomic` block touches first.
   */
  private guard(entry: NameEntry): void {
    if (entry.detached) {
      throw new ConcordError(
        ErrorCodes.CLOSED,
        this.context.closed
          ? `"${entry.name}": the store is closed; the change was refused`
          : `"${entry.name}" was expired, archived or deleted: open it again to change it`,
      )
    }
    const block = this.block
    if (block !== undefined && !block.records.has(entry)) {
      block.records.set(entry, { before: entry.replica.version(), record: entry.replica.recordUndo?.() })
    }
  }

  /** The `change` listener of every hydrated replica: a local change (or a delta applied to it directly) to log. */
  private onChange(entry: NameEntry, event: ChangeEvent): void {
    // A rollback, a compensating change the store makes itself, or the store's own apply (logged from what it returned).
    if (event.rollback === true || this.silenced === entry || (!event.local && entry.applying)) return
    if (entry.detached) {
      this.context.events.emit('error', {
        name: entry.name,
        error: new ConcordError(ErrorCodes.CLOSED, `"${entry.name}" was expired, archived or the store closed: a change was not persisted`),
      })
      return
    }
    if (this.assembling === undefined && this.merge.merges(entry)) {
      // Its delta is not read here: a replica's local run may encode it only when read.
      this.merge.add(entry, event)
      return
    }
    const item: LogItem = { entry, delta: event.delta, hlc: this.context.clock.now(), agent: this.context.agentId }
    if (this.assembling !== undefined) this.assembling.push(item)
    else this.enqueueItems([item]).catch((error) => this.reportFailure([entry], error))
  }

  /** Runs `fn` with the change events of `entry` not logged (the store's own rollback of it). */
  silently<T>(entry: NameEntry, fn: () => T): T {
    const previous = this.silenced
    this.silenced = entry
    try {
      return fn()
    } finally {
      this.silenced = previous
    }
  }

  /** Ends the unit local changes of async names were joining (see local-merge.ts). */
  endMerging(): void {
    this.merge.end()
  }

  /** The pipeline's failure handler: rolls the names of refused units back (rollback.ts). */
  rollBack(error: ConcordError, states: ReadonlySet<NameState>): Promise<void> {
    return rollBack(this.context, this.names, this, error, states)
  }

  /** @internal runs `fn` and returns the local changes made meanwhile (not written); assemblies nest. */
  assemble(fn: (items: readonly LogItem[]) => void): LogItem[] {
    // Changes made while a unit is assembled are not the merging unit's.
    this.merge.end()
    const items: LogItem[] = []
    const previous = this.assembling
    this.assembling = items
    try {
      fn(items)
    } finally {
      this.assembling = previous
    }
    // One unit, one time: every record of it carries the HLC of its last change, so a cut by time
    // (restoreTo, an answer made of records) takes a transaction whole or not at all.
    const last = items.at(-1)?.hlc
    return last === undefined ? items : items.map((item) => (item.hlc === last ? item : { ...item, hlc: last }))
  }

  // ------------------------------------------------------------ the three assembled units

  /**
   * Applies remote `deltas` to their (hydrated) entries and logs what they
   * changed as one unit, all or none (see the module comment); resolves
   * once durable per the names' modes. `agent` (with `message` and
   * `metaJson`) is recorded as the author of every record of the unit.
   * `applied` is called once the unit is queued (see `Store.commit`); a unit
   * of the remote deltas alone is announced then (`applied` event), its
   * `committed` event marked `announced`.
   */
  async commit(
    entries: readonly NameEntry[],
    deltas: ReadonlyArray<{
      readonly name: string
      readonly delta: Uint8Array
      readonly signature?: RecordSignature | undefined
      /** This delta's own author and provenance (several remote commits in one unit), instead of the unit's. */
      readonly provenance?: (EncodedProvenance & { readonly agent: string }) | undefined
    }>,
    options: { readonly origin?: unknown; readonly applied?: () => void; readonly independent?: boolean | undefined } & EncodedProvenance,
  ): Promise<ApplyResult[]> {
    const { context } = this
    // Several deltas, or a name to create: checked strictly, so that none is refused once one applied.
    const strict = deltas.length > 1 || entries.some((entry) => entry.state.unborn)
    const unitAgent = options.agent ?? context.agentId
    const changed: boolean[] = []
    let items: LogItem[]
    /** The items of the remote deltas (the others are local changes that joined the unit). */
    let remote = 0
    try {
      const prepared = deltas.map((item, i) => prepareRemote(entries[i].replica, item.delta, context, strict))
      items = this.assemble((assembled) => {
        for (const [i, entry] of entries.entries()) {
          const before = assembled.length
          const applied = entry.whileApplying(() => prepared[i].apply(options.origin))
          const { signature, delta, provenance: own } = deltas[i]
          // A delta with a provenance of its own is logged under it (and kept so by the unit's stamping below).
          const agent = own?.agent ?? unitAgent
          const stamp = own ? { message: own.message, metaJson: own.metaJson, authored: own.authored, own: true as const } : {}
          // Local changes made by listeners while it applied joined the unit before it.
          if (applied !== null) {
            const released = applied === delta || bytesEqual(applied, delta) ? [] : (entry.replica.lastApply?.().released ?? [])
            if (released.length > 0) {
              // It let in updates that waited for it: each is logged as it came, with who sent it and its signature
              // (a signature goes with the bytes it signed, not with their merge), after this delta.
              ;(assembled as LogItem[]).push({ entry, delta, hlc: context.clock.now(), agent, remote: true, ...stamp, ...(signature ? { signature } : {}) })
              for (const bytes of released) {
                const held = this.held.get(bytes)
                ;(assembled as LogItem[]).push({
                  entry,
                  delta: bytes,
                  hlc: context.clock.now(),
                  agent: held?.agent ?? agent,
                  remote: true,
                  own: true,
                  ...(held ? { message: held.message, metaJson: held.metaJson, authored: held.authored, signature: held.signature } : {}),
                })
                remote++
              }
            } else {
              const signed = signature !== undefined && (applied === delta || bytesEqual(applied, delta))
              ;(assembled as LogItem[]).push({
                entry,
                delta: applied,
                hlc: context.clock.now(),
                agent,
                remote: true,
                ...stamp,
                ...(signed ? { signature } : {}),
              })
            }
            remote++
          } else {
            // It waits for a dependency: who sent it is kept with the copy the replica holds, until it is let in.
            const held = entry.replica.lastApply?.().held
            const from = own ?? options
            if (held) this.held.set(held, { agent, message: from.message, metaJson: from.metaJson, authored: from.authored, signature })
          }
          changed.push(applied !== null || assembled.length > before)
        }
      })
    } catch (error) {
      // Refused (nothing of it was applied): the names this commit would have created are not left behind.
      this.names.forgetUnstored(entries)
      throw error
    }
    const { message, metaJson, authored } = options
    const plain = message === undefined && metaJson === undefined && authored === undefined
    const stamped = items.map((item) => (item.own || (item.agent === unitAgent && plain) ? item : { ...item, agent: unitAgent, message, metaJson, authored }))
    // A name this commit creates is stored in the commit's batch, with its first records.
    const created = entries.filter((entry) => entry.state.unborn)
    let records: CommittedRecord[] = []
    if (stamped.length > 0 || created.length > 0) {
      // Announced before it is durable only when it logs the remote deltas alone, as they are.
      const announce = remote === stamped.length && stamped.length > 0 && context.events.listenerCount('applied') > 0 && stamped.every(announceable)
      // Several names in one unit are joint, unless the sender said they never shared one (and no local change joined them).
      const joint = !options.independent || stamped.some((item) => !item.remote)
      const writing = this.enqueueItems(stamped, { origin: options.origin, create: created, announced: announce, joint })
      if (announce) {
        context.events.emit('applied', {
          origin: options.origin,
          records: stamped.map((item) => ({
            name: item.entry.name,
            type: item.entry.type,
            seq: 0,
            delta: item.delta,
            kind: 'delta' as const,
            agent: item.agent,
            ...(item.message !== undefined ? { message: item.message } : {}),
            ...(item.metaJson !== undefined ? { metaJson: item.metaJson } : {}),
            authored: item.authored ?? item.hlc,
            ...(item.signature !== undefined ? { signature: item.signature } : {}),
          })),
        })
      }
      // While more names are held than the cache keeps (a first sync's bundles arriving faster than they are written),
      // the caller takes its next commit only once this one is written: what it holds stays bounded by the cache.
      if (!this.names.overfull) options.applied?.()
      records = await writing
    } else {
      options.applied?.()
    }
    // The last record of each name (one pass: an answer bundle commits thousands of names at once).
    const lastSeqs = new Map<string, number>()
    for (const record of records) lastSeqs.set(record.name, record.seq)
    return entries.map((entry, i) => ({ changed: changed[i], seq: lastSeqs.get(entry.name) ?? entry.state.meta.lastSeq }))
  }

  /**
   * Runs `fn` (local mutations) and logs its changes as one unit. When `fn`
   * throws, every change it made is taken back (each name it touched undoes
   * them: exactly for native types and Automerge, by a compensating
   * transaction for a Yjs document, whose undone structs are logged with
   * its next change), nothing is logged or sent, and the error is rethrown.
   * The records name `agent` as their author (default: this replica), with
   * the change's `message` and `metaJson`.
   */
  async atomic(fn: () => void, provenance: EncodedProvenance = {}): Promise<ReadonlyArray<{ name: string; seq: number }>> {
    const { agent, message, metaJson } = provenance
    const block: BlockUndo = { records: new Map() }
    const outer = this.block
    this.block = block
    let items: LogItem[]
    try {
      items = this.assemble(() => fn())
    } catch (error) {
      this.block = outer
      undoBlock(block)
      throw error
    }
    this.block = outer
    for (const { record } of block.records.values()) record?.release()
    if (items.length === 0) return []
    const plain = agent === undefined && message === undefined && metaJson === undefined
    const records = await this.enqueueItems(plain ? items : items.map((item) => ({ ...item, agent: agent ?? item.agent, message, metaJson })), {
      joint: true,
    })
    return records.map((r) => ({ name: r.name, seq: r.seq }))
  }

  /**
   * Runs the migration steps of a newly hydrated `entry` up to `schema` and
   * logs their changes with the new schema version, as one unit (migration.ts).
   */
  migrate(entry: NameEntry, schema: Schema): Promise<void> {
    return migrateEntry(this.context, this, entry, schema)
  }

  // ------------------------------------------------------------ the unit queue

  /**
   * Writes `items` as one unit; resolves once durable per the names' modes,
   * then emits `committed`. `joint`: a unit of several names is a
   * transaction (an `atomic` block, a remote commit): its names are marked
   * (names/joint-names.ts).
   */
  private enqueueItems(
    items: readonly LogItem[],
    { origin, create = [], announced = false, joint = false }: { origin?: unknown; create?: readonly NameEntry[]; announced?: boolean; joint?: boolean } = {},
  ): Promise<CommittedRecord[]> {
    const entries = [...new Set([...items.map((item) => item.entry), ...create])]
    const logged = joint ? [...new Set(items.map((item) => item.entry.name))] : []
    if (logged.length > 1) this.context.jointNames.note(logged)
    return this.enqueueUnit(
      {
        sync: entries.some((entry) => entry.durability.mode === 'sync'),
        states: entries.map((entry) => entry.state),
        changes: true,
        build: (b) => {
          const records = buildAppends(this.context, b, items)
          if (logged.length > 1) this.context.jointNames.write(b, logged)
          // Names the unit creates without a record of theirs (a delta that added nothing).
          for (const entry of create) if (entry.state.unborn) b.setMeta(entry.state, b.meta(entry.state))
          return records
        },
      },
      () => entries,
      origin,
      announced,
    )
  }

  /**
   * Queues a unit that logs changes of `entries()` (read once written: a
   * merging unit's names grow while it waits); resolves once durable per
   * its mode, then emits `committed`.
   */
  private async enqueueUnit(
    unit: Unit<CommittedRecord[]>,
    entries: () => Iterable<NameEntry>,
    origin?: unknown,
    announced = false,
  ): Promise<CommittedRecord[]> {
    const { context } = this
    const records = await context.committer.enqueue(unit)
    if (records.length > 0 && context.events.listenerCount('committed') > 0) {
      const types = new Map<string, ReplicaType>()
      for (const entry of entries()) types.set(entry.name, entry.type)
      context.events.emit('committed', {
        origin,
        records: records.map((r) => unitRecord(r, types.get(r.name)!)),
        ...(announced ? { announced } : {}),
      })
    }
    return records
  }

  private reportFailure(entries: readonly NameEntry[], error: unknown): void {
    const failure = isConcordError(error) ? error : new ConcordError(ErrorCodes.STORAGE_ERROR, String(error))
    for (const entry of entries) this.context.events.emit('error', { name: entry.name, error: failure })
  }
}

/**
 * `delta` checked for `replica` against the store's document limits, ready
 * to apply (a replica without `prepareDelta` applies it unchecked).
 */
function prepareRemote(replica: Replica, delta: Uint8Array, context: StoreContext, strict: boolean): PreparedDelta {
  if (replica.prepareDelta !== undefined) return replica.prepareDelta(delta, { limits: context.remoteLimits, strict })
  return { apply: (origin) => (replica.applyDelta(delta, origin) ? delta : null) }
}

/** Takes back the changes of a block that threw, newest name first. */
function undoBlock(block: BlockUndo): void {
  for (const [entry, { record, before }] of [...block.records].reverse()) {
    if (record === undefined) {
      // A replica that cannot undo: its changes stay, and are logged with its next change.
      entry.beyondLog(before)
      continue
    }
    const exact = record.undo()
    // A compensating change: the replica holds structs the log lacks, logged with the next change.
    if (!exact) entry.beyondLog(before)
  }
  // The states were set back without change events: digests computed meanwhile are stale.
  for (const [entry] of block.records) entry.forgetDigest()
}

/**
 * Whether an item is written exactly as it is (so it may be announced before
 * it is durable): no repair record goes before it, and its delta is within
 * the limit its record is checked against when built.
 */
function announceable(item: LogItem): boolean {
  return item.entry.repairSince === undefined && item.delta.length <= recordLimit(item.entry)
}
