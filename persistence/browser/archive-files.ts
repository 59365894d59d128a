/**
 * Archive files in a browser: there are none. Archival moves a cold name's
 * keys to a compressed file beside the database, and a page has no file
 * system beside IndexedDB; `concord-crdt/browser` refuses `archiveAfterMs`, and
 * an explicit `store.archive(name)` is refused here. Same exports as
 * persistence/lifecycle/archive-files.ts, which a bundler building for the browser
 * replaces with this module.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { ArchiveMarker } from '../format/archive.ts'
import type { ArchivedEntry } from '../format/archive.ts'
import type { NameMeta } from '../format/name-meta.ts'
import type { SegmentRef } from '../format/segments.ts'
import type { StorageEntry } from '../storage/storage.ts'

function unavailable(what: string): ConcordError {
  return new ConcordError(
    ErrorCodes.INVALID_ARGUMENT,
    `${what}: archival writes files beside the database, and a browser has none (keep the name in IndexedDB)`,
  )
}

/** Refuses: a browser has no archive files. */
export async function writeArchive(
  _dir: string,
  meta: NameMeta,
  _entries: readonly StorageEntry[],
  _now: number,
): Promise<{ file: string; marker: Uint8Array }> {
  throw unavailable(`archiving "${meta.name}"`)
}

/** Refuses: a browser has no archive files (an archived name cannot come from one). */
export async function readArchive(_dir: string, marker: ArchiveMarker): Promise<{ entries: StorageEntry[]; remove: () => Promise<void> }> {
  throw unavailable(`rehydrating "${marker.name}"`)
}

/** Refuses: a browser has no archive files (retention `{ archiveAfterMs }` needs them). */
export async function writeSegment(_dir: string, name: string, _fromSeq: number, _toSeq: number, _entries: readonly ArchivedEntry[]): Promise<SegmentRef> {
  throw unavailable(`archiving records of "${name}"`)
}

/** Refuses: a browser has no archive files. */
export async function readSegment(_dir: string, name: string, _ref: SegmentRef): Promise<ArchivedEntry[]> {
  throw unavailable(`reading archived records of "${name}"`)
}

/** Nothing to remove: a browser has no archive files. */
export async function removeSegments(_dir: string, _refs: readonly SegmentRef[]): Promise<void> {}
