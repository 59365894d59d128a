/**
 * The seal's formats (FORMAT.md, "Seal"): the seal file beside the
 * database, the seal key and the recorded losses. What the seal does is
 * persistence/lifecycle/seal.ts.
 */
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { openChecksummed, sealWithChecksum } from './checksum.ts'

/** The seal file's name, in the store's folder (LevelDB ignores files it does not know). */
export const SEAL_FILE = 'concord-seal'
/** Format version of the seal file, the seal key and the losses value. */
export const SEAL_VERSION = 1

/** Every name at a clean close: its last seq (the archived ones: as archived). */
export interface SealFile {
  readonly agentId: string
  readonly generation: number
  readonly closedAt: number
  readonly names: ReadonlyArray<{ readonly name: string; readonly lastSeq: number }>
}

/** The seal key: the generation of the last open or close, and which. */
export interface SealKey {
  readonly generation: number
  readonly closed: boolean
}

/** Records acknowledged before a clean close that the store no longer holds. */
export interface Loss {
  readonly name: string
  /** First missing seq (1: the whole name is missing). */
  readonly fromSeq: number
  /** Last seq at the clean close. */
  readonly toSeq: number
  /** When the close was (ms). */
  readonly closedAt: number
  /** When the loss was found (ms). */
  readonly foundAt: number
}

function decodeWith<T>(bytes: Uint8Array, what: string, read: (d: Decoder) => T): T {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `${what}: checksum mismatch or truncated`)
  if (body[0] > SEAL_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `${what}: format version ${body[0]} is newer than this code`)
  try {
    const d = new Decoder(body)
    d.readVersion(SEAL_VERSION, what)
    const value = read(d)
    d.end(what)
    return value
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `${what}: ${(error as Error).message}`, { cause: error })
  }
}

/** `u8 1 | string agentId | varuint generation | varuint closedAt | count, (string name, varuint lastSeq)* | u32 crc` */
export function encodeSealFile(seal: SealFile): Uint8Array {
  const e = new Encoder().writeUint8(SEAL_VERSION).writeString(seal.agentId).writeVarUint(seal.generation).writeVarUint(seal.closedAt)
  e.writeVarUint(seal.names.length)
  for (const { name, lastSeq } of seal.names) e.writeString(name).writeVarUint(lastSeq)
  return sealWithChecksum(e.finish())
}

/** Decodes a seal file; with `names: false`, its header only (no name list: the intact case reads no more). */
export function decodeSealFile(bytes: Uint8Array, options: { names?: boolean } = {}): SealFile {
  return decodeWith(bytes, 'seal file', (d) => {
    const agentId = d.readString()
    const generation = d.readVarUint()
    const closedAt = d.readVarUint()
    if (options.names === false) {
      d.readRaw(d.remaining)
      return { agentId, generation, closedAt, names: [] }
    }
    const count = d.readCount(2)
    const names: Array<{ name: string; lastSeq: number }> = []
    for (let i = 0; i < count; i++) names.push({ name: d.readString(), lastSeq: d.readVarUint() })
    return { agentId, generation, closedAt, names }
  })
}

/** `u8 1 | varuint generation | u8 closed | u32 crc` */
export function encodeSealKey(key: SealKey): Uint8Array {
  return sealWithChecksum(
    new Encoder()
      .writeUint8(SEAL_VERSION)
      .writeVarUint(key.generation)
      .writeUint8(key.closed ? 1 : 0)
      .finish(),
  )
}

export function decodeSealKey(bytes: Uint8Array): SealKey {
  return decodeWith(bytes, 'seal key', (d) => ({ generation: d.readVarUint(), closed: d.readUint8() === 1 }))
}

/** `u8 1 | count, (string name, varuint fromSeq, varuint toSeq, varuint closedAt, varuint foundAt)* | u32 crc` */
export function encodeLosses(losses: readonly Loss[]): Uint8Array {
  const e = new Encoder().writeUint8(SEAL_VERSION).writeVarUint(losses.length)
  for (const l of losses) e.writeString(l.name).writeVarUint(l.fromSeq).writeVarUint(l.toSeq).writeVarUint(l.closedAt).writeVarUint(l.foundAt)
  return sealWithChecksum(e.finish())
}

export function decodeLosses(bytes: Uint8Array): Loss[] {
  return decodeWith(bytes, 'losses', (d) => {
    const count = d.readCount(5)
    const out: Loss[] = []
    for (let i = 0; i < count; i++) {
      out.push({ name: d.readString(), fromSeq: d.readVarUint(), toSeq: d.readVarUint(), closedAt: d.readVarUint(), foundAt: d.readVarUint() })
    }
    return out
  })
}
