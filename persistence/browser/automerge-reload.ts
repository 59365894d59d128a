/**
 * A browser's stand-in for persistence/automerge-reload.ts (package.json
 * `browser`): Node's reloader re-evaluates Automerge's CommonJS glue for a
 * fresh wasm instance, which a page cannot do with an ES module already
 * evaluated. So a browser peer registers no reloader: after a wasm trap
 * Automerge calls fail with a stable code (crdt/documents/automerge-runtime.ts)
 * until the page is reloaded; every other type keeps working.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** Refuses: a page cannot load a second Automerge instance. */
export function reloadAutomerge(): void {
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'Automerge cannot be reloaded in a browser: reload the page')
}

/** Registers nothing in a browser (see the module comment). */
export function installAutomergeReloader(): void {}
