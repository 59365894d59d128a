/**
 * The archive tier of a name's log: older records moved out of LevelDB to
 * compressed segment files beside it (retention `{ archiveAfterMs }`), and
 * the index that lists them under `['g', name]` (format version 1):
 *
 * ```
 * u8      format version (1)
 * string  name
 * count   segments, oldest first, contiguous from seq 1:
 *   varuint fromSeq | varuint toSeq | string file | raw32 sha256(file) | varuint fileSize
 * u32     CRC-32 of everything above
 * ```
 *
 * A segment file holds the records `fromSeq..toSeq` byte for byte as they
 * were in the log (the archive file body of persistence/format/archive.ts,
 * gzip-compressed), so their checksums and hash chain verify unchanged.
 */
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { HASH_BYTES, openChecksummed, sealWithChecksum } from './checksum.ts'

/** Current segment index format version. */
export const SEGMENT_INDEX_VERSION = 1

/** One archived segment of a name's log. */
export interface SegmentRef {
  readonly fromSeq: number
  readonly toSeq: number
  /** File name inside the archive folder's `segments/`. */
  readonly file: string
  readonly sha256: Uint8Array
  readonly fileSize: number
}

/** Key of a name's segment index. */
export const segmentIndexKey = (name: string): readonly string[] => ['g', name]

/** Encodes a segment index. */
export function encodeSegmentIndex(name: string, segments: readonly SegmentRef[]): Uint8Array {
  const e = new Encoder().writeUint8(SEGMENT_INDEX_VERSION).writeString(name).writeVarUint(segments.length)
  for (const s of segments) e.writeVarUint(s.fromSeq).writeVarUint(s.toSeq).writeString(s.file).writeRaw(s.sha256).writeVarUint(s.fileSize)
  return sealWithChecksum(e.finish())
}

/** Decodes a segment index; `CONCORD_CORRUPT_RECORD` if damaged, of another name, or not contiguous from seq 1. */
export function decodeSegmentIndex(name: string, bytes: Uint8Array): SegmentRef[] {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `segment index of "${name}": checksum mismatch or truncated`)
  try {
    const d = new Decoder(body)
    d.readVersion(SEGMENT_INDEX_VERSION, 'segment index')
    if (d.readString() !== name) throw new Error('the index belongs to another name')
    const count = d.readCount(4 + HASH_BYTES)
    const out: SegmentRef[] = []
    let next = 1
    for (let i = 0; i < count; i++) {
      const fromSeq = d.readVarUint()
      const toSeq = d.readVarUint()
      if (fromSeq !== next || toSeq < fromSeq) throw new Error(`segment ${fromSeq}..${toSeq} does not follow seq ${next - 1}`)
      out.push({ fromSeq, toSeq, file: d.readString(), sha256: d.readRaw(HASH_BYTES).slice(), fileSize: d.readVarUint() })
      next = toSeq + 1
    }
    d.end('segment index')
    return out
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `segment index of "${name}": ${(error as Error).message}`, { cause: error })
  }
}
