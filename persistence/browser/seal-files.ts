/**
 * A browser's stand-in for persistence/lifecycle/seal-files.ts (package.json
 * `browser`): the seal is a file in a store's folder, and a browser store
 * has none (the seal is read and written only for a store opened with a
 * folder).
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** Raw DEFLATE for the seal's chunks: fflate's (a browser store never writes a seal; here for the same exports). */
export { deflateSync as deflateRaw } from 'fflate'

/** No seal file in a browser. */
export async function readSealFile(_dir: string, _file: string): Promise<Uint8Array | undefined> {
  return undefined
}

/** Refuses: a browser has no folder to write a seal file in. */
export async function writeSealFile(dir: string, file: string, _bytes: Uint8Array): Promise<void> {
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `no folder for the seal file ${file} in a browser (${dir})`)
}
