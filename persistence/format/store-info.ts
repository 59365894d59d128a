/**
 * Store-wide information under `['s', 'info']` (format version 1):
 * `u8 version | string agentId | varuint created (ms) | u32 CRC-32`.
 * An empty `agentId` ({@link UNCLAIMED}) marks a store created by a
 * maintenance tool (`concord import`): the first peer that opens it claims it.
 */
import { Decoder, Encoder } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { openChecksummed, sealWithChecksum } from './checksum.ts'

/** Current store-info format version. */
export const STORE_INFO_VERSION = 1

/** The `agentId` of a store no replica has claimed yet. */
export const UNCLAIMED = ''

/** What a store records about itself. */
export interface StoreInfo {
  readonly agentId: string
  readonly created: number
}

/** Encodes store information. */
export function encodeStoreInfo(info: StoreInfo): Uint8Array {
  return sealWithChecksum(new Encoder().writeUint8(STORE_INFO_VERSION).writeString(info.agentId).writeVarUint(info.created).finish())
}

/** Decodes store information; `CONCORD_CORRUPT_RECORD` if damaged. */
export function decodeStoreInfo(bytes: Uint8Array): StoreInfo {
  const body = openChecksummed(bytes)
  if (!body) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'store info: checksum mismatch or truncated')
  if (body[0] > STORE_INFO_VERSION) throw new ConcordError(ErrorCodes.UNSUPPORTED_VERSION, `store info: format version ${body[0]} is newer than this code`)
  try {
    const d = new Decoder(body)
    d.readVersion(STORE_INFO_VERSION, 'store info')
    const info = { agentId: d.readString(), created: d.readVarUint() }
    d.end('store info')
    return info
  } catch (error) {
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `store info: ${(error as Error).message}`, { cause: error })
  }
}
