/**
 * A browser's stand-in for persistence/storage/level/space-probe.ts (package.json
 * `browser`): a LevelStorage probes a folder only when it has one (a
 * classic-level `dir`), which no browser storage has.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** Refuses: a browser has no folder to probe. */
export async function probeFolderSpace(dir: string): Promise<void> {
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `no folder to probe in a browser (${dir})`)
}

/** Refuses: a browser has no folder to measure. */
export async function folderBytes(dir: string): Promise<{ readonly total: number; readonly logs: number }> {
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `no folder to measure in a browser (${dir})`)
}
