/**
 * The seal: what a store on disk holds at its last clean close, kept
 * outside LevelDB so that losses inside it are seen (FORMAT.md, "Seal").
 *
 * LevelDB recovers a damaged or truncated newest `.log` silently: it keeps
 * the batches before the damage and drops the rest, and every name's own
 * checks then see a shorter, consistent log (a truncated `.log` of a cleanly
 * closed store opened with 2 to 94 of 121 names missing, no error). So:
 *
 * - on a clean close, the last batch writes the seal key `s / seal`
 *   (generation G, closed) and then the file `<dir>/concord-seal` lists, for
 *   generation G, every name with its last seq (written to a temp file,
 *   fsynced, renamed, folder fsynced);
 * - on open, the seal key is read: the same G as the file means LevelDB
 *   holds everything up to the close (its log loses suffixes, and the key was
 *   the last write); a lower G or none means it lost the end of its log, and
 *   every name of the file is checked against what the store holds: a name
 *   missing or with a shorter log is a loss, recorded under `s / losses`
 *   (kept until `repair` accepts it), reported (`lost` events after open,
 *   `Store.losses`) and failing `verify`. A higher G means the store was
 *   opened after that close and not closed cleanly: the file says nothing.
 * - then the key is written with G + 1 (open); not synced by itself: every
 *   later synced write covers it, and if it is lost, so is all that came
 *   after it (LevelDB loses suffixes), and the store is as the seal says.
 *
 * A folder from before the seal has neither; it opens unchanged, and its
 * first clean close writes both.
 *
 * A close lists every name once (a scan of every name's metadata: about
 * 10 us per name, seconds at a million names) unless the file on disk is
 * known to list the store as it was opened (key and file of the same
 * generation, closed): then the close starts from the file's list, reads
 * again only the names written since the open ({@link SealChanges}), and
 * writes again only the chunks of the list those names fall in (the file
 * holds its list in deflated chunks of 4,096 names, format/seal.ts).
 */
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import { compareCodePoints, LOSSES_KEY, SEAL_KEY } from '../format/keys.ts'
import {
  decodeLosses,
  decodeSealFile,
  decodeSealKey,
  encodeLosses,
  encodeSealFile,
  encodeSealKey,
  packChunks,
  patchChunks,
  SEAL_FILE,
  sealEntries,
  type Loss,
  type SealChunk,
  type SealEntry,
  type SealFile,
  type SealKey,
} from '../format/seal.ts'
import type { Names } from '../names/owner.ts'
import type { WriteObserver } from '../pipeline/committer.ts'
import type { Storage, StorageOperation } from '../storage/storage.ts'
import { deflateRaw, readSealFile, writeSealFile } from './seal-files.ts'

export type { Loss } from '../format/seal.ts'

/** The recorded losses (none: empty). */
export async function readLosses(storage: Storage): Promise<Loss[]> {
  const bytes = await storage.get(LOSSES_KEY)
  return bytes ? decodeLosses(bytes) : []
}

/** Decodes, or undefined: a seal that does not decode says nothing. */
function tryDecode(bytes: Uint8Array | undefined, names: boolean): SealFile | undefined {
  try {
    return bytes === undefined ? undefined : decodeSealFile(bytes, { names })
  } catch {
    return undefined
  }
}

/** Every entry of a decoded file, or undefined when a chunk does not decode. */
function tryEntries(file: SealFile): SealEntry[] | undefined {
  try {
    return sealEntries(file)
  } catch {
    return undefined
  }
}

/** Names tracked by {@link SealChanges} at most; past it, the close lists every name. */
const MAX_TRACKED_NAMES = 65_536

/** Key kinds whose writes can change a name's entry in the seal: metadata, log, tail marker, archive marker. */
const SEALED_KINDS = new Set(['m', 'l', 't', 'a'])

/**
 * The names every batch of the commit pipeline touches (every write of a
 * name's keys goes through it), from the store's open to its close, so
 * that the close reads only those again (see the module comment); at most
 * {@link MAX_TRACKED_NAMES}, after which `names` is undefined.
 */
export class SealChanges implements WriteObserver {
  private touched: Set<string> | undefined = new Set()
  /** The generation of the seal file that lists the store as opened (set by the seal check), if one does. */
  base: number | undefined

  /** The names written since the open, or undefined when there were too many to track. */
  get names(): ReadonlySet<string> | undefined {
    return this.touched
  }

  beforeWrite(ops: readonly StorageOperation[]): void {
    const touched = this.touched
    if (touched === undefined) return
    for (const op of ops) {
      const name = op.key[1]
      if (name !== undefined && SEALED_KINDS.has(op.key[0])) touched.add(name)
    }
    if (touched.size > MAX_TRACKED_NAMES) this.touched = undefined
  }

  afterWrite(): void {}
}

/** Every stored name with its last seq (the log tail included) and every archived one, in key order, as chunks. */
async function sealedNames(owner: Names): Promise<SealChunk[]> {
  const stored: SealEntry[] = []
  for await (const meta of owner.metas()) stored.push({ name: meta.name, lastSeq: meta.lastSeq })
  const archived: SealEntry[] = []
  for await (const marker of owner.markers()) archived.push({ name: marker.name, lastSeq: marker.lastSeq })
  // Both listings are in key order: merged, not sorted.
  const names: SealEntry[] = []
  let at = 0
  for (const entry of stored) {
    while (at < archived.length && compareCodePoints(archived[at].name, entry.name) < 0) names.push(archived[at++])
    names.push(entry)
  }
  while (at < archived.length) names.push(archived[at++])
  return packChunks(names, undefined, deflateRaw)
}

/**
 * The chunks of the seal file of generation `changes.base` with the names
 * written since brought up to date (only the chunks they fall in are
 * written again): undefined when that file is gone or another, or when so
 * many names were written that listing all is cheaper.
 */
async function updatedNames(owner: Names, dir: string, changes: SealChanges): Promise<SealChunk[] | undefined> {
  const touched = changes.names
  if (changes.base === undefined || touched === undefined) return undefined
  const file = tryDecode(await readSealFile(dir, SEAL_FILE), true)
  if (file === undefined || file.generation !== changes.base) return undefined
  let count = 0
  for (const chunk of file.chunks) count += chunk.count
  // One read per written name against a scan of every name: about five times the cost per name.
  if (touched.size * 5 > count) return undefined
  const held = new Map<string, number | undefined>()
  for (const name of touched) {
    // As the scan would list it: damaged metadata skipped; a failing read fails the close's seal (the file is then stale).
    const meta = await owner.meta(name, { stored: true }).catch(skipDamaged)
    held.set(name, meta !== undefined ? meta.lastSeq : (await owner.marker(name).catch(skipDamaged))?.lastSeq)
  }
  try {
    return patchChunks(file.chunks, held, deflateRaw)
  } catch {
    // A chunk that does not decode (the file was damaged since the open): the full listing.
    return undefined
  }
}

/** What a listing skips as damaged (metadata or a marker that does not decode); anything else (an I/O error) is thrown. */
const DAMAGED: readonly string[] = [ErrorCodes.CORRUPT_RECORD, ErrorCodes.UNSUPPORTED_VERSION, ErrorCodes.DECODE_ERROR]

function skipDamaged(error: unknown): undefined {
  if (isConcordError(error) && DAMAGED.includes(error.code)) return undefined
  throw error
}

/** The last seq the store holds for `name` (archived: as archived), or undefined when it has no such name. */
async function heldSeq(owner: Names, name: string): Promise<number | undefined> {
  const meta = await owner.meta(name).catch(() => undefined)
  if (meta) return meta.lastSeq
  return (await owner.marker(name).catch(() => undefined))?.lastSeq
}

/**
 * On open (see the module comment): compares the seal with what LevelDB
 * holds, records the losses it finds, and marks the store open. Returns the
 * losses found now. Sets `changes.base` when the file lists the store as
 * it is opened.
 */
export async function checkSeal(context: StoreContext, owner: Names, dir: string, changes?: SealChanges): Promise<Loss[]> {
  const { storage } = context
  const fileBytes = await readSealFile(dir, SEAL_FILE)
  const file = tryDecode(fileBytes, false)
  const keyBytes = await storage.get(SEAL_KEY)
  let key: SealKey | undefined
  try {
    key = keyBytes ? decodeSealKey(keyBytes) : undefined
  } catch {
    key = undefined
  }
  const found: Loss[] = []
  // The file belongs to the folder, whoever opens it (a maintenance tool works under its own id).
  const sealed = file !== undefined && (key === undefined || key.generation < file.generation) ? tryDecode(fileBytes, true) : undefined
  // A chunk that does not decode makes the file say nothing, as a file that does not decode.
  const entries = sealed !== undefined ? tryEntries(sealed) : undefined
  if (sealed !== undefined && entries !== undefined) {
    const now = context.now()
    for (const { name, lastSeq } of entries) {
      if (lastSeq === 0) continue
      const held = await heldSeq(owner, name)
      if (held === undefined) found.push({ name, fromSeq: 1, toSeq: lastSeq, closedAt: sealed.closedAt, foundAt: now })
      else if (held < lastSeq) found.push({ name, fromSeq: held + 1, toSeq: lastSeq, closedAt: sealed.closedAt, foundAt: now })
    }
  }
  // The last close wrote the key and then this file: it lists what the store holds now.
  if (changes !== undefined && file !== undefined && key?.closed === true && key.generation === file.generation) changes.base = file.generation
  const generation = Math.max(file?.generation ?? 0, key?.generation ?? 0) + 1
  const ops = [{ type: 'put' as const, key: SEAL_KEY, value: encodeSealKey({ generation, closed: false }) }]
  if (found.length > 0) {
    const known = await readLosses(storage).catch(() => [])
    const merged = new Map(known.map((loss) => [loss.name, loss]))
    for (const loss of found) {
      const earlier = merged.get(loss.name)
      merged.set(loss.name, earlier ? { ...loss, fromSeq: Math.min(earlier.fromSeq, loss.fromSeq), toSeq: Math.max(earlier.toSeq, loss.toSeq) } : loss)
    }
    ops.push({ type: 'put', key: LOSSES_KEY, value: encodeLosses([...merged.values()]) })
  }
  // Not synced by itself: a later synced write covers it (LevelDB's log is sequential), and if it
  // is lost, so is everything after it, and the store is as the seal says. Recorded losses are synced.
  await storage.batch(ops, { sync: found.length > 0 })
  return found
}

/**
 * On a clean close, once everything is written: the seal key (the last
 * batch), then the seal file. Failures leave the previous file, which the
 * next open then takes for stale (its generation is lower than the key's).
 * With `changes`, the names are the last file's updated where that can be
 * done (see the module comment).
 */
export async function writeSeal(context: StoreContext, owner: Names, dir: string, changes?: SealChanges): Promise<void> {
  const key = await context.storage.get(SEAL_KEY)
  const generation = (key ? decodeSealKey(key).generation : 0) + 1
  const chunks = (changes !== undefined ? await updatedNames(owner, dir, changes) : undefined) ?? (await sealedNames(owner))
  await context.storage.batch([{ type: 'put', key: SEAL_KEY, value: encodeSealKey({ generation, closed: true }) }], { sync: true })
  await writeSealFile(dir, SEAL_FILE, encodeSealFile({ agentId: context.agentId, generation, closedAt: context.now(), chunks }))
}

/** How `verify` states a loss, and what to do about it. */
export function lossProblem(loss: Loss): string {
  const what = loss.fromSeq === 1 ? `the whole name (records 1..${loss.toSeq}) is missing` : `records ${loss.fromSeq}..${loss.toSeq} are missing`
  return `${what}, although written before the clean close of ${new Date(loss.closedAt).toISOString()} (LevelDB lost the end of its log): sync with a peer that holds them (anti-entropy resends them), or restore the folder from a backup; then \`concord repair --dir DIR ${JSON.stringify(loss.name)}\` accepts the loss`
}

/** Removes the recorded loss of `name` (accepted); returns it, if there was one. */
export async function acceptLoss(storage: Storage, name: string): Promise<Loss | undefined> {
  const losses = await readLosses(storage)
  const loss = losses.find((l) => l.name === name)
  if (!loss) return undefined
  const rest = losses.filter((l) => l.name !== name)
  await storage.batch([rest.length > 0 ? { type: 'put', key: LOSSES_KEY, value: encodeLosses(rest) } : { type: 'del', key: LOSSES_KEY }], { sync: true })
  return loss
}
