/**
 * The files of the inspector page, all served by the peer (no CDN): the
 * page's bundle and Automerge's wasm. The bundle is built by `npm run
 * build` into dist/inspector/assets/inspector.js, next to this module's
 * JavaScript; run from the repository (tsx, no build), it is built in
 * memory with esbuild on first request (scripts/build-inspector.mjs).
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'

let bundle: Promise<Uint8Array> | undefined
let wasm: Promise<Uint8Array> | undefined

/** The page's JavaScript: the built file, or (in the repository) built now, once. A failure is retried at the next call. */
export function inspectorBundle(): Promise<Uint8Array> {
  bundle ??= loadBundle().catch((error: unknown) => {
    bundle = undefined
    throw error
  })
  return bundle
}

async function loadBundle(): Promise<Uint8Array> {
  const built = fileURLToPath(new URL('./assets/inspector.js', import.meta.url))
  if (existsSync(built)) return new Uint8Array(await readFile(built))
  const source = fileURLToPath(new URL('./page/main.ts', import.meta.url))
  const builder = new URL('../scripts/build-inspector.mjs', import.meta.url)
  if (!existsSync(source) || !existsSync(fileURLToPath(builder))) {
    throw new ConcordError(ErrorCodes.NOT_FOUND, 'the inspector page is not built (npm run build writes dist/inspector/assets/inspector.js)')
  }
  const { buildInspectorPage } = (await import(builder.href)) as { buildInspectorPage: () => Promise<Uint8Array> }
  return buildInspectorPage()
}

/** Automerge's wasm (`@automerge/automerge/automerge.wasm`), for the page's peer to load on first need. */
export function automergeWasm(): Promise<Uint8Array> {
  wasm ??= readFile(createRequire(import.meta.url).resolve('@automerge/automerge/automerge.wasm'))
    .then((bytes) => new Uint8Array(bytes))
    .catch((error: unknown) => {
      wasm = undefined
      throw error
    })
  return wasm
}
