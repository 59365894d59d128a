/**
 * How what is stored about each name is read from storage: its metadata
 * (as written, or brought up to the end of its log: FORMAT.md "Name
 * metadata"), its archive marker, and the names whose log runs past their
 * metadata (tail markers). Plain functions of the store's context, for the
 * owner of the names (persistence/names/owner.ts) and its index
 * (persistence/names/name-index.ts); a live entry's metadata is the owner's
 * to prefer.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import { decodeArchiveMarker, type ArchiveMarker } from '../format/archive.ts'
import { ARCHIVE_PREFIX, archiveKey, logKey, logPrefix, META_PREFIX, metaKey, parseSeqKey, TAIL_PREFIX } from '../format/keys.ts'
import { decodeMeta, type NameMeta } from '../format/name-meta.ts'
import { decodeRecord, recordHash } from '../format/record.ts'
import type { SignalOptions, StorageKey } from '../storage/storage.ts'
import type { NameEntry } from './entry.ts'

/** How the owner's `Names.meta` and `Names.metas` read (persistence/names/owner.ts). */
export interface MetaOptions extends SignalOptions {
  /** The metadata as stored: no live entry, no log tail after it. */
  readonly written?: boolean | undefined
  /** The metadata as stored brought up to the end of the log (its tail), without a live entry's. */
  readonly stored?: boolean | undefined
}

/** Where `Names.metas` and `Names.markers` start, by name (in key order: UTF-8 bytes, that is code points). */
export interface NameRange {
  /** From this name on (a prefix of the names wanted starts there). */
  readonly from?: string | undefined
  /** After this name (a page's cursor). */
  readonly after?: string | undefined
}

/** What {@link storedMetas} asks of the cache: the live entry of a name, if any. */
export interface LiveEntries {
  live(name: string): NameEntry | undefined
}

/**
 * The stored metadata of `name` (`Names.meta` once no live entry
 * answers): as written, or with `written` unset brought up to the end of
 * its log. Undefined if it is not stored; with `mustExist`,
 * `CONCORD_NOT_FOUND` instead (saying when the name is archived).
 */
export async function storedMeta(context: StoreContext, name: string, options: MetaOptions & { readonly mustExist?: boolean }): Promise<NameMeta | undefined> {
  let meta = decodeStored(name, await context.storage.get(metaKey(name), { signal: options.signal }))
  if (meta && !options.written) meta = await withTail(context, meta, options.signal)
  if (!meta && options.mustExist) {
    throw new ConcordError(
      ErrorCodes.NOT_FOUND,
      `"${name}" does not exist${(await context.storage.get(archiveKey(name))) ? ' (it is archived: open it first)' : ''}`,
    )
  }
  return meta
}

/** Decodes the metadata stored under `name` (undefined: none). */
export function decodeStored(name: string, bytes: Uint8Array | undefined): NameMeta | undefined {
  if (!bytes) return undefined
  const meta = decodeMeta(bytes, name)
  if (meta.name !== name) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `metadata stored under "${name}" belongs to "${meta.name}"`)
  return meta
}

/**
 * The metadata of every stored name that is not archived (damaged ones
 * skipped), in name order, once the pipeline is idle: a live entry's (from
 * `cache`), else the stored one brought up to the end of its log, or with
 * `written` as stored. `where` picks names by their metadata as written
 * before anything else is read for them (a name's `touched` only grows, its
 * type never changes).
 */
export async function* storedMetas(
  context: StoreContext,
  cache: LiveEntries,
  options: MetaOptions & NameRange & { readonly where?: (written: NameMeta) => boolean },
): AsyncGenerator<NameMeta> {
  const { signal } = options
  await context.committer.idle()
  const tails = options.written ? undefined : await tailNames(context, signal)
  for await (const item of context.storage.iterate({ prefix: META_PREFIX, ...keyRange(metaKey, options), signal })) {
    let written: NameMeta
    try {
      written = decodeMeta(item.value, item.key[1])
    } catch {
      // A damaged metadata value fails its name when opened; listings skip it.
      continue
    }
    if (options.where && !options.where(written)) continue
    if (!tails) {
      yield written
      continue
    }
    const live = cache.live(written.name)
    yield live ? live.state.meta : tails.has(written.name) ? await withTail(context, written, signal) : written
  }
}

/** The archive marker of `name`, or undefined when it is not archived. */
export async function storedMarker(context: StoreContext, name: string, options: SignalOptions): Promise<ArchiveMarker | undefined> {
  const bytes = await context.storage.get(archiveKey(name), options)
  return bytes ? decodeArchiveMarker(bytes) : undefined
}

/** Every archive marker (damaged ones skipped), in name order. */
export async function* storedMarkers(context: StoreContext, options: SignalOptions & NameRange): AsyncGenerator<ArchiveMarker> {
  for await (const item of context.storage.iterate({ prefix: ARCHIVE_PREFIX, ...keyRange(archiveKey, options), signal: options.signal })) {
    try {
      yield decodeArchiveMarker(item.value)
    } catch {}
  }
}

/**
 * Stored metadata brought up to the end of the log: records appended after
 * the metadata was last written move `lastSeq`, `lastHash`, `logBytes` and
 * `touched` (the HLC wall time of the newest record). Records are not
 * checked here (hydration, `history`, `at` and `verify` do that).
 */
async function withTail(context: StoreContext, meta: NameMeta, signal?: AbortSignal): Promise<NameMeta> {
  const { name } = meta
  let lastSeq = meta.lastSeq
  let logBytes = meta.logBytes
  let newest: Uint8Array | undefined
  // The chain hashed forward from the metadata's lastHash (a version 4 record's hash derives from the one before).
  let chain = meta.lastHash
  let chainSeq = meta.lastSeq
  for await (const entry of context.storage.iterate({ prefix: logPrefix(name), gt: logKey(name, meta.lastSeq), signal })) {
    const seq = parseSeqKey(entry.key[2] ?? '')
    if (Number.isNaN(seq)) continue
    lastSeq = seq
    logBytes += entry.value.length
    newest = entry.value
    if (seq === chainSeq + 1) {
      chain = recordHash(entry.value, name, seq, chain)
      chainSeq = seq
    }
  }
  if (!newest) return meta
  let lastHash = meta.lastHash
  let touched = meta.touched
  try {
    const record = decodeRecord(newest, { name, seq: lastSeq })
    if (chainSeq === lastSeq) lastHash = chain
    touched = Math.max(touched, record.hlc.wall)
  } catch {
    // A damaged newest record: hydration truncates it; readers report it.
  }
  return { ...meta, lastSeq, lastHash, logBytes, touched }
}

/** Names whose log runs past their stored metadata (they have a tail marker). */
export async function tailNames(context: StoreContext, signal?: AbortSignal): Promise<Set<string>> {
  const names = new Set<string>()
  for await (const key of context.storage.keys({ prefix: TAIL_PREFIX, signal })) names.add(key[1])
  return names
}

/** The storage bounds of a {@link NameRange} for the keys `keyOf` makes. */
function keyRange(keyOf: (name: string) => StorageKey, range: NameRange): { gte?: StorageKey; gt?: StorageKey } {
  return {
    ...(range.from !== undefined ? { gte: keyOf(range.from) } : {}),
    ...(range.after !== undefined ? { gt: keyOf(range.after) } : {}),
  }
}
