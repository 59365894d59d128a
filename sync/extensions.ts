/**
 * HELLO extensions this version knows (unknown keys are ignored, see
 * sync/PROTOCOL.md).
 *
 * `window-bytes` (value: `varUint`): the commit bytes the sender of the
 * HELLO accepts in flight, sent to it and not yet acknowledged, besides the
 * `window` count. Its receive queue has a byte budget; a remote that keeps
 * within this window never reaches it. One commit larger than the window
 * is still sent when nothing else is in flight.
 */
import { Decoder, Encoder } from '../crdt/codec.ts'
import type { HelloMessage } from './messages.ts'

/** Key of the byte window extension. */
export const WINDOW_BYTES_EXTENSION = 'window-bytes'

/** The extension announcing a byte window of `bytes`. */
export function windowBytesExtension(bytes: number): { readonly key: string; readonly value: Uint8Array } {
  return { key: WINDOW_BYTES_EXTENSION, value: new Encoder(8).writeVarUint(Math.max(1, Math.floor(bytes))).finish() }
}

/** The byte window a HELLO announces, or `undefined` (absent or malformed: no byte window). */
export function windowBytesOf(hello: HelloMessage): number | undefined {
  const extension = hello.extensions.find((candidate) => candidate.key === WINDOW_BYTES_EXTENSION)
  if (!extension) return undefined
  try {
    const decoder = new Decoder(extension.value)
    const bytes = decoder.readVarUint()
    decoder.end('window-bytes extension')
    return bytes >= 1 ? bytes : undefined
  } catch {
    return undefined
  }
}

/**
 * Key of the reconciliation extension (value: `varUint` 1, the format):
 * the sender resyncs by ranges (RANGES, WANT; sync/reconcile.ts). Used
 * when both HELLOs carry it; otherwise VERSIONS.
 */
export const RECONCILE_EXTENSION = 'reconcile'

/** The extension announcing reconciliation. */
export function reconcileExtension(): { readonly key: string; readonly value: Uint8Array } {
  return { key: RECONCILE_EXTENSION, value: new Encoder(2).writeVarUint(1).finish() }
}

/** Whether a HELLO announces reconciliation (format 1). */
export function takesReconcile(hello: HelloMessage): boolean {
  const extension = hello.extensions.find((candidate) => candidate.key === RECONCILE_EXTENSION)
  if (!extension) return false
  try {
    const decoder = new Decoder(extension.value)
    const format = decoder.readVarUint()
    decoder.end('reconcile extension')
    return format === 1
  } catch {
    return false
  }
}

/**
 * Key of the independent-bundles extension (value: `varUint` 1, the
 * format): the sender of the HELLO takes INDEPENDENT messages (a
 * TRANSACTION whose names never shared a unit on its sender; an answer
 * sends its independent names so, sync/answer-bundles.ts), and does not keep
 * their names together later. A remote without it gets TRANSACTIONs.
 */
export const INDEPENDENT_EXTENSION = 'independent'

/** The extension announcing INDEPENDENT messages. */
export function independentExtension(): { readonly key: string; readonly value: Uint8Array } {
  return { key: INDEPENDENT_EXTENSION, value: new Encoder(2).writeVarUint(1).finish() }
}

/** Whether a HELLO announces INDEPENDENT messages (format 1). */
export function takesIndependent(hello: HelloMessage): boolean {
  const extension = hello.extensions.find((candidate) => candidate.key === INDEPENDENT_EXTENSION)
  if (!extension) return false
  try {
    const decoder = new Decoder(extension.value)
    const format = decoder.readVarUint()
    decoder.end('independent extension')
    return format === 1
  } catch {
    return false
  }
}
