/**
 * The Node reloader of Automerge's wasm module (see
 * crdt/documents/automerge-runtime.ts): a fresh copy of the package's
 * Node glue (`wasm_bindgen_output/nodejs/automerge_wasm.cjs`, which
 * instantiates its own wasm instance when it is evaluated), installed with
 * `A.use`. The glue is taken out of the CommonJS cache before it is
 * required again, so each reload is a new instance; the terminated one is
 * garbage once nothing refers to its documents (the first one stays
 * referenced by Automerge's own entry point).
 *
 * And the Node loader (registered when this module is evaluated, which a
 * store's module does): Automerge's wasm is loaded the first time an
 * Automerge document is needed, from the same glue (the CommonJS cache's
 * copy, which Automerge's full entry point shares if it is imported too),
 * so a process that opens only other types never loads it.
 */
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import * as A from '@automerge/automerge/slim'
import { hasAutomergeReloader, setAutomergeLoader, setAutomergeReloader } from '../crdt/documents/automerge-runtime.ts'

const require = createRequire(import.meta.url)

/** The glue's path, found from the package's CommonJS entry point (dist/cjs/fullfat_node.cjs). */
function gluePath(): string {
  return join(dirname(require.resolve('@automerge/automerge')), '..', 'mjs', 'wasm_bindgen_output', 'nodejs', 'automerge_wasm.cjs')
}

/** Loads Automerge's wasm (the glue's one instance) and makes it the one every Automerge call uses. */
export function loadAutomerge(): void {
  A.use(require(gluePath()) as Parameters<typeof A.use>[0])
}

setAutomergeLoader(loadAutomerge)

/** Loads a fresh wasm instance of Automerge and makes it the one every Automerge call uses. */
export function reloadAutomerge(): void {
  const path = gluePath()
  delete require.cache[path]
  const api = require(path) as Parameters<typeof A.use>[0]
  A.use(api)
}

/** Registers {@link reloadAutomerge} unless a reloader is registered already. */
export function installAutomergeReloader(): void {
  if (!hasAutomergeReloader()) setAutomergeReloader(reloadAutomerge)
}
