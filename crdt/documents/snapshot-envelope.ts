/**
 * The versioned envelope around a document snapshot (the whole state of a
 * Yjs or Automerge document), so that a snapshot says what it is before
 * anyone hands its payload to a library.
 *
 * Format (version 1):
 * ```
 * u8      format version (1)
 * u8      document kind: 1 = Yjs (payload: a v1 update of the whole state),
 *                        2 = Automerge (payload: `Automerge.save()`)
 * u8      flags: bit 0 = Yjs garbage collection on; other bits 0
 * varuint payload length, then the payload (the envelope ends with it)
 * ```
 */
import { Encoder, decodeGuarded } from '../codec.ts'
import { DecodeError, withArticle } from '../errors.ts'

/** Current envelope format version. */
export const SNAPSHOT_FORMAT_VERSION = 1

/** Document kinds, by their byte in the envelope. */
export const DocumentKind = { yjs: 1, automerge: 2 } as const

/** A decoded snapshot envelope. */
export interface DocumentSnapshot {
  readonly kind: keyof typeof DocumentKind
  /** Yjs garbage collection setting (false for Automerge). */
  readonly gc: boolean
  /** The library's own encoding of the whole state (not yet validated). */
  readonly payload: Uint8Array
}

/** Encodes a snapshot envelope. */
export function encodeDocumentSnapshot(snapshot: DocumentSnapshot): Uint8Array {
  const encoder = new Encoder(snapshot.payload.length + 16)
  encoder.writeUint8(SNAPSHOT_FORMAT_VERSION)
  encoder.writeUint8(DocumentKind[snapshot.kind])
  encoder.writeUint8(snapshot.gc ? 1 : 0)
  encoder.writeBytes(snapshot.payload)
  return encoder.finish()
}

/**
 * Decodes a snapshot envelope and checks it holds the `expected` kind.
 * Throws {@link DecodeError} on a bad version, kind, flags or length. The
 * payload still has to go through the kind's guard.
 */
export function decodeDocumentSnapshot(bytes: Uint8Array, expected: keyof typeof DocumentKind): DocumentSnapshot {
  return decodeGuarded('document snapshot', bytes, (decoder) => {
    decoder.readVersion(SNAPSHOT_FORMAT_VERSION, 'document snapshot')
    const kindByte = decoder.readUint8()
    const kind = kindByte === DocumentKind.yjs ? 'yjs' : kindByte === DocumentKind.automerge ? 'automerge' : undefined
    if (kind === undefined) throw new DecodeError(`document snapshot: unknown document kind ${kindByte}`)
    if (kind !== expected) throw new DecodeError(`document snapshot: holds ${withArticle(kind)} document, not ${withArticle(expected)} one`)
    const flags = decoder.readUint8()
    if ((flags & ~1) !== 0 || (kind === 'automerge' && flags !== 0)) throw new DecodeError(`document snapshot: unknown flags ${flags}`)
    const payload = decoder.readBytes()
    return { kind, gc: (flags & 1) === 1, payload }
  })
}
