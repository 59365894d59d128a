/**
 * `concord import --from-y-leveldb PATH`: brings every document of a
 * y-leveldb database (as written by the `y-leveldb` package) into Concord
 * Yjs names, each checked against what y-leveldb's own `getYDoc` returns.
 *
 * y-leveldb reads through its own `level` dependency; it swallows errors
 * inside its transactions (logs them and returns null), so the folder is
 * first checked here: it must exist and must not be held by another process.
 * Note that `getYDoc` of a document with more than 500 stored updates
 * compacts them in the source database (y-leveldb's own behaviour).
 *
 * `y-leveldb` is an optional peer dependency of concord (it brings a second
 * LevelDB binding, for one migration command): it is loaded only here, and
 * a missing package is a clear error saying what to install.
 */
import { ClassicLevel } from 'classic-level'
import * as Y from 'yjs'
import { documentValue } from '../crdt/documents/index.ts'
import type { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import type { Store } from '../persistence/store.ts'
import { CliError, ExitCodes } from './exit-codes.ts'
import { isDataFolder } from './open-store.ts'

/** What happened to one y-leveldb document. */
export interface YLeveldbDocReport {
  /** The document name in y-leveldb. */
  readonly doc: string
  /** The Concord name it went to. */
  readonly name: string
  /** Size of the document's state as one Yjs update, bytes. */
  readonly bytes: number
  /** True when the name did not exist before (then the check is equality, else inclusion). */
  readonly created: boolean
  /** The Concord name equals (or, when merged into an existing name, contains) the y-leveldb document. */
  readonly verified: boolean
}

/** Options of {@link importFromYLeveldb}. */
export interface YLeveldbImportOptions {
  /** Prefix of the Concord names (default none: same names). */
  readonly prefix?: string
  /** Called after each document. */
  readonly onDoc?: (report: YLeveldbDocReport, index: number, total: number) => void
  /** Called once the document count is known. */
  readonly onCount?: (total: number) => void
}

/** The y-leveldb version range concord's import is written and tested against. */
export const Y_LEVELDB_RANGE = '^0.2.0'

/** Loads y-leveldb, or fails with what to install. */
async function loadYLeveldb(): Promise<typeof import('y-leveldb')> {
  try {
    return await import('y-leveldb')
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'ERR_MODULE_NOT_FOUND' && /'y-leveldb'/.test(String((error as Error).message))) {
      throw new CliError(
        ExitCodes.FAILURE,
        `--from-y-leveldb needs the y-leveldb package (an optional peer dependency of concord): npm i y-leveldb@${Y_LEVELDB_RANGE}`,
        { cause: error },
      )
    }
    throw error
  }
}

/** Throws "not found" / "locked" before y-leveldb gets to swallow the error. */
async function checkSource(path: string): Promise<void> {
  if (!isDataFolder(path)) throw new CliError(ExitCodes.NOT_FOUND, `no LevelDB database at ${path}`)
  const db = new ClassicLevel(path, { createIfMissing: false })
  try {
    await db.open()
  } catch (error) {
    const code = (error as { code?: string }).code
    const cause = (error as { cause?: { code?: string } }).cause?.code
    if (code === 'LEVEL_LOCKED' || cause === 'LEVEL_LOCKED')
      throw new CliError(ExitCodes.LOCKED, `${path}: the y-leveldb database is held by another process`, { cause: error })
    throw new CliError(ExitCodes.FAILURE, `${path}: cannot open the y-leveldb database (${(error as Error).message})`, { cause: error })
  } finally {
    await db.close().catch(() => undefined)
  }
}

/** True when `outer` holds everything `inner` holds. */
function contains(outer: Y.Doc, inner: Y.Doc): boolean {
  const probe = new Y.Doc()
  Y.applyUpdate(probe, Y.encodeStateAsUpdate(outer))
  const before = Y.snapshot(probe)
  Y.applyUpdate(probe, Y.encodeStateAsUpdate(inner))
  const same = Y.equalSnapshots(before, Y.snapshot(probe))
  probe.destroy()
  return same
}

/** Imports every document of the y-leveldb database at `path` into `store`. */
export async function importFromYLeveldb(store: Store, path: string, options: YLeveldbImportOptions = {}): Promise<YLeveldbDocReport[]> {
  const { LeveldbPersistence } = await loadYLeveldb()
  await checkSource(path)
  const source = new LeveldbPersistence(path, { levelOptions: { createIfMissing: false } })
  const reports: YLeveldbDocReport[] = []
  try {
    // getAllDocNames exists in y-leveldb 0.2.0 but is missing from its type declarations.
    const docs = await (source as unknown as { getAllDocNames(): Promise<string[] | null> }).getAllDocNames()
    if (!Array.isArray(docs)) throw new CliError(ExitCodes.FAILURE, `${path}: y-leveldb could not list its documents`)
    options.onCount?.(docs.length)
    for (const [index, doc] of docs.entries()) {
      const ydoc = (await source.getYDoc(doc)) as Y.Doc | null
      if (!ydoc) throw new CliError(ExitCodes.FAILURE, `${path}: y-leveldb could not read document "${doc}"`)
      try {
        const name = (options.prefix ?? '') + doc
        const created = (await store.typeOf(name)) === undefined
        const update = Y.encodeStateAsUpdate(ydoc)
        await store.applyRemote(name, update, { type: 'yjs' })
        const replica = (await store.open(name, 'yjs')) as YjsReplica
        const verified = created
          ? Y.equalSnapshots(Y.snapshot(replica.doc), Y.snapshot(ydoc)) && JSON.stringify(documentValue(replica.doc)) === JSON.stringify(documentValue(ydoc))
          : contains(replica.doc, ydoc)
        const report = { doc, name, bytes: update.length, created, verified }
        reports.push(report)
        options.onDoc?.(report, index, docs.length)
      } finally {
        ydoc.destroy()
      }
    }
    await store.flush()
    return reports
  } finally {
    await source.destroy()
  }
}
