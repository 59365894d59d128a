/**
 * Automerge in a browser peer. Automerge's engine is 3.6 MB of wasm, more
 * than the rest of the browser build many times over, so it is not
 * bundled: `concord-crdt/browser` carries Automerge's JavaScript
 * (`@automerge/automerge/slim`, which the package's `browser` field puts in
 * place of the full entry) and loads the wasm from where the page says, on
 * first need: the first `peer.automerge(name)`, the first remote commit
 * carrying an Automerge document (before it is applied, so the commit is
 * applied whole), or at start when the database already holds one.
 */
import { initializeWasm, isWasmInitialized } from '@automerge/automerge/slim'

/**
 * Where Automerge's wasm comes from: a URL (fetched; serve it as
 * `application/wasm`), its bytes, a `Response`, a compiled
 * `WebAssembly.Module`, or a function returning any of them (called on
 * first need).
 */
export type AutomergeWasmSource = string | { readonly href: string } | Uint8Array | ArrayBuffer | object

/** Options of Automerge in a browser peer. */
export interface AutomergeOptions {
  readonly wasm: AutomergeWasmSource | (() => AutomergeWasmSource | Promise<AutomergeWasmSource>)
}

/** Loads Automerge's wasm once, on first need; a failed load is retried at the next need. */
export class AutomergeLoader {
  private loading: Promise<string | undefined> | undefined

  constructor(private readonly options: AutomergeOptions | false | undefined) {}

  /** Resolves undefined once Automerge can be used, or why it cannot (not configured, or the wasm failed to load). */
  prepare(): Promise<string | undefined> {
    if (isWasmInitialized()) return Promise.resolve(undefined)
    const options = this.options
    if (!options) {
      return Promise.resolve(
        'this browser peer was created without Automerge: give createPeer({ automerge: { wasm } }) the URL of @automerge/automerge/automerge.wasm',
      )
    }
    this.loading ??= this.load(options).then((reason) => {
      if (reason !== undefined) this.loading = undefined
      return reason
    })
    return this.loading
  }

  private async load(options: AutomergeOptions): Promise<string | undefined> {
    try {
      const source = typeof options.wasm === 'function' ? await (options.wasm as () => AutomergeWasmSource)() : options.wasm
      const blob = typeof source === 'object' && source !== null && 'href' in source && typeof source.href === 'string' ? source.href : source
      await initializeWasm(blob as Parameters<typeof initializeWasm>[0])
      return undefined
    } catch (error) {
      return `Automerge's wasm could not be loaded (${(error as Error)?.message ?? String(error)})`
    }
  }
}
