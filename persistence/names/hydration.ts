/**
 * Hydration of one name (for its owner, owner.ts): its replica rebuilt
 * from the newest checkpoint and the log after it (integrity-checked; a
 * torn tail is truncated and reported), or a new, empty name; its policies;
 * a TTL change written; the replica wired to the write path and its schema
 * migrations run (the owner's hooks).
 */
import { ConcordError, ErrorCodes, TypeMismatchError } from '../../crdt/errors.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import { logKey, logPrefix } from '../format/keys.ts'
import { newMeta, type NameMeta } from '../format/name-meta.ts'
import { checkRetention, DEFAULT_RETENTION, type Durability, type NameOptions, type Schema } from '../options.ts'
import { NameState } from '../pipeline/name-state.ts'
import type { StorageKey } from '../storage/storage.ts'
import { NameEntry, type NameEntryInit } from './entry.ts'
import type { NameReader } from './read-ahead.ts'
import { rebuild, type TornTail } from './replay.ts'

/** What the owner's hydration needs of the modules above it (given by the store when it is composed). */
export interface NameHooks {
  /** Wires a newly hydrated entry's replica to the write path (its change listener and guard). */
  attach(entry: NameEntry): void
  /** Brings the data of a newly hydrated entry to `schema` (its migrations, logged as one unit). */
  migrate(entry: NameEntry, schema: Schema): Promise<void>
  /** Brings an archived name back into the database; false if it is not archived. */
  rehydrate(name: string, signal?: AbortSignal): Promise<boolean>
}

/**
 * Loads `name` from its metadata as written (`written`; undefined: a new
 * name, created in memory when `type` is given). A name it creates is
 * stored at once, or with `deferCreation` by the first batch that writes it
 * (a commit: the name and its first records are one batch). Its checkpoints
 * and log are read through `reader` (the owner's read-ahead).
 */
export async function loadEntry(
  context: StoreContext,
  hooks: NameHooks,
  name: string,
  written: NameMeta | undefined,
  type: ReplicaType | undefined,
  options: NameOptions,
  deferCreation: boolean,
  reader: NameReader = context.storage,
): Promise<NameEntry> {
  const schema = schemaOf(context, options)
  if (!written && (options.mustExist || type === undefined)) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
  if (written && type !== undefined && written.type !== type) throw new TypeMismatchError(name, type, written.type)
  if (written && written.schema > schema.version) {
    throw new ConcordError(ErrorCodes.SCHEMA_TOO_NEW, `"${name}" was written with schema version ${written.schema}; this code knows up to ${schema.version}`)
  }
  if (!written) {
    const entry = newEntry(context, name, type!, options)
    if (!deferCreation) await storeCreated(context, entry)
    hooks.attach(entry)
    // A new name is made at the schema version asked for: nothing to migrate.
    return entry
  }
  let state: NameState
  let replica: Replica
  let torn: { tail: TornTail; seq: number; hash: Uint8Array } | undefined
  {
    // The stored metadata may lag the log: replay to the end of the log and take its tail from there.
    const rebuilt = await rebuild({
      storage: reader,
      meta: written,
      target: written.lastSeq,
      toEnd: true,
      allowTornTail: true,
      merge: context.replayMergerOf(written.type),
      signal: options.signal,
      create: (snapshot) => context.newReplica(written.type, snapshot),
    })
    replica = rebuilt.replica
    state =
      rebuilt.seq === written.lastSeq
        ? new NameState(written)
        : new NameState(
            {
              ...written,
              lastSeq: rebuilt.seq,
              lastHash: rebuilt.hash,
              logBytes: rebuilt.replayedBytes,
              touched: Math.max(written.touched, rebuilt.hlc?.wall ?? 0),
            },
            { metaBehind: true },
          )
    if (rebuilt.torn) torn = { tail: rebuilt.torn, seq: rebuilt.seq, hash: rebuilt.hash }
  }
  const entry = new NameEntry({
    name,
    state,
    replica,
    ...policiesOf(context, options),
    dirtySince: state.meta.lastSeq > (state.meta.checkpoints.at(-1)?.seq ?? 0) ? context.now() : 0,
  })
  if (torn) await truncate(context, state, torn.seq, torn.hash, torn.tail)
  if (options.ttlMs !== undefined && options.ttlMs !== state.meta.ttlMs) {
    const ttlMs = options.ttlMs
    await context.committer.enqueue({ sync: true, states: [state], build: (b) => b.setMeta(state, { ...b.meta(state), ttlMs }) })
  }
  hooks.attach(entry)
  if (state.meta.schema < schema.version) await hooks.migrate(entry, schema)
  return entry
}

/**
 * A new, empty name of `type` made in memory (not stored, not wired to the
 * write path): what {@link loadEntry} makes of a name that does not exist,
 * without reading anything.
 */
export function newEntry(context: StoreContext, name: string, type: ReplicaType, options: NameOptions): NameEntry {
  // A new name is stored by the first batch that writes it (with its first records).
  const state = new NameState(newMeta(name, type, schemaOf(context, options).version, context.now(), options.ttlMs ?? 0), { unborn: true })
  return new NameEntry({
    name,
    state,
    replica: context.newReplica(type),
    ...policiesOf(context, options),
    dirtySince: 0,
    empty: context.emptyState(type),
  })
}

/** The schema a name is opened at. */
function schemaOf(context: StoreContext, options: NameOptions): Schema {
  return options.schema ?? context.options.schema ?? { version: 0 }
}

/** The policies of a name opened with `options` (the store's defaults where they say nothing; shared, not made per name). */
function policiesOf(context: StoreContext, options: NameOptions): Pick<NameEntryInit, 'durability' | 'policy' | 'retention'> {
  return {
    durability: options.durability ?? context.options.durability ?? SYNC,
    policy: options.checkpoint === undefined ? context.checkpointPolicy : { ...context.checkpointPolicy, ...options.checkpoint },
    retention: checkRetention(options.retention) ?? context.options.retention ?? DEFAULT_RETENTION,
  }
}

const SYNC: Durability = { mode: 'sync' }

/**
 * Stores a name created in memory and not written yet (its metadata alone),
 * as `open` promises: durable as the name's writes are (fsynced in `sync`
 * mode; in `async` mode written at once, fsynced within `rpoMs`).
 */
export async function storeCreated(context: StoreContext, entry: NameEntry): Promise<void> {
  const { state } = entry
  if (!state.unborn) return
  await context.committer.enqueue({
    sync: entry.durability.mode !== 'async',
    states: [state],
    build: (b) => {
      if (state.unborn) b.setMeta(state, b.meta(state))
    },
  })
}

/**
 * Stores names created in memory and not written yet (their metadata alone)
 * in one unit, so one batch: what `openMany` promises for each, as
 * {@link storeCreated} does for one.
 */
export async function storeCreatedMany(context: StoreContext, entries: readonly NameEntry[]): Promise<void> {
  const unborn = entries.filter((entry) => entry.state.unborn)
  if (unborn.length === 0) return
  // Their first record writes their metadata (no tail marker, no catch-up write later).
  for (const { state } of unborn) state.metaWithFirstRecord = true
  await context.committer.enqueue({
    sync: unborn.some((entry) => entry.durability.mode !== 'async'),
    states: unborn.map((entry) => entry.state),
    build: (b) => {
      for (const { state } of unborn) if (state.unborn) b.setMeta(state, b.meta(state))
    },
  })
}

/** Deletes a torn tail (every key from its first damaged record on) and reports it. */
async function truncate(context: StoreContext, state: NameState, seq: number, hash: Uint8Array, torn: TornTail): Promise<void> {
  const name = state.meta.name
  const doomed: StorageKey[] = []
  for await (const key of context.storage.keys({ prefix: logPrefix(name), gte: logKey(name, torn.fromSeq) })) doomed.push(key)
  await context.committer.enqueue({
    sync: true,
    states: [state],
    build: (b) => {
      for (const key of doomed) b.del(key)
      const meta = b.meta(state)
      b.setMeta(state, {
        ...meta,
        lastSeq: seq,
        lastHash: hash,
        firstSeq: Math.min(meta.firstSeq, seq + 1),
        checkpoints: meta.checkpoints.filter((cp) => cp.seq <= seq),
      })
    },
  })
  const report = { name, fromSeq: torn.fromSeq, toSeq: torn.toSeq, reason: torn.reason }
  context.truncations.push(report)
  context.events.emit('truncated', report)
}
