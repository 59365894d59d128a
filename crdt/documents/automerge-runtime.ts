/**
 * Keeping Automerge usable after its wasm module fails.
 *
 * Automerge 3.5 runs in one wasm instance per process. When a call traps
 * (a Rust panic, or memory exhausted: `RuntimeError: unreachable`), its
 * wasm-bindgen glue marks the instance terminated and every later call of
 * every document throws `Module terminated`: one bad delta would leave every
 * Automerge name of the process dead. So:
 * - {@link automergeFailed} tells a trap from an ordinary Automerge error
 *   (which its parser throws as a JS Error and leaves the module usable) by
 *   probing the module after the error;
 * - {@link recoverAutomerge} installs a fresh wasm instance through the
 *   reloader a host environment registered ({@link setAutomergeReloader}:
 *   the Node one is in persistence/automerge-reload.ts) and moves the
 *   {@link automergeGeneration} on; every replica built in an older
 *   generation rebuilds its document from the bytes it keeps (see
 *   AutomergeReplica) the next time it is used.
 * Without a reloader the failure is still reported with a stable code, but
 * documents stay unusable until the process restarts.
 *
 * The modules of crdt/ import Automerge's JavaScript alone (its `slim`
 * entry): the wasm (about 13 MB of a Node process's memory) is loaded when
 * an Automerge document is first needed ({@link ensureAutomerge}), through
 * the loader the environment registered ({@link setAutomergeLoader}: Node's
 * is in persistence/automerge-reload.ts; the entries crdt/index.ts,
 * crdt/documents/index.ts and sync/index.ts import Automerge's full entry,
 * which loads it at once). A browser peer loads it itself before a document
 * is used (peer/browser-automerge.ts).
 */
import * as A from '@automerge/automerge/slim'
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'

/** Installs a fresh Automerge wasm instance (through `A.use`); throws if it cannot. */
export type AutomergeReloader = () => void

/** Loads Automerge's wasm module the first time it is needed, synchronously (through `A.use`). */
export type AutomergeLoader = () => void

let loader: AutomergeLoader | undefined
let reloader: AutomergeReloader | undefined

/** Registers how this environment loads Automerge's wasm module on first need (the first one registered stays). */
export function setAutomergeLoader(load: AutomergeLoader): void {
  loader ??= load
}

/**
 * Loads Automerge's wasm module if no one did yet and a loader is
 * registered: called before the first Automerge call that needs no
 * document (creating or loading one, parsing bytes). Without a loader an
 * uninitialized module is left as it is (its calls then fail, reported as
 * {@link automergeError} says).
 */
export function ensureAutomerge(): void {
  if (loader === undefined || A.isWasmInitialized()) return
  try {
    loader()
  } catch {
    // Reported by the Automerge call that follows (the module is not initialized).
  }
}
let generation = 0
let recoveries = 0

/** Registers how this environment reloads Automerge's wasm module (the last one registered wins). */
export function setAutomergeReloader(reload: AutomergeReloader | undefined): void {
  reloader = reload
}

/** Whether a reloader is registered. */
export function hasAutomergeReloader(): boolean {
  return reloader !== undefined
}

/** The current wasm generation: documents built in an older one must be rebuilt. */
export function automergeGeneration(): number {
  return generation
}

/** How many times the module was reloaded in this process. */
export function automergeRecoveries(): number {
  return recoveries
}

/** Whether the Automerge module still answers (a cheap call through its guard). */
function moduleAlive(): boolean {
  ensureAutomerge()
  try {
    A.free(A.init())
    return true
  } catch {
    return false
  }
}

/** Whether `error`, thrown by an Automerge call, left the wasm module terminated. */
export function automergeFailed(error: unknown): boolean {
  if (error instanceof ConcordError) return false
  return !moduleAlive()
}

/**
 * Reloads the module after a failure (once per failure: a module that
 * answers again is left as it is) and starts a new generation. Returns
 * whether Automerge is usable now.
 */
export function recoverAutomerge(): boolean {
  if (moduleAlive()) return true
  if (reloader === undefined) return false
  try {
    reloader()
  } catch {
    return false
  }
  if (!moduleAlive()) return false
  generation++
  recoveries++
  return true
}

/**
 * The typed error for an Automerge call that threw `cause`: after a trap the
 * module is recovered first (documents rebuild on their next use) and the
 * error says so (`CONCORD_DECODE_ERROR` for input: the delta is refused;
 * `CONCORD_LIBRARY_FAILED` otherwise); any other error is `DecodeError` for
 * input and `CONCORD_INVALID_ARGUMENT` otherwise.
 */
export function automergeError(what: string, cause: unknown, input = true): ConcordError {
  if (cause instanceof ConcordError) return cause
  const message = (cause as Error)?.message ?? String(cause)
  if (automergeFailed(cause)) {
    const recovered = recoverAutomerge()
    const tail = recovered
      ? 'the wasm module was reloaded and documents are rebuilt from their saved bytes'
      : 'Automerge could not be reloaded: its documents are unusable until the process restarts'
    return new ConcordError(input ? ErrorCodes.DECODE_ERROR : ErrorCodes.LIBRARY_FAILED, `${what}: Automerge failed (${message}); ${tail}`, { cause })
  }
  return input ? new DecodeError(`${what}: ${message}`, { cause }) : new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${what}: ${message}`, { cause })
}
