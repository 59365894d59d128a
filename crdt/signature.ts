/**
 * Signed provenance (issue 16, "Trust"): what an author's Ed25519 signature
 * of one record covers, and how an author id names its public key. The
 * cryptography itself is below the peer (persistence/format/ed25519.ts and
 * its browser twin); this module is the pure part every layer shares: the
 * canonical bytes that are signed, and the PeerId form of a public key.
 *
 * Signed bytes (persistence/FORMAT.md, sync/PROTOCOL.md "Signatures"):
 *
 * ```
 * varString "concord-record-signature"   domain separation
 * u8        1                            version of this encoding
 * varString name, varString type, varString agent
 * varUint   authored.wall, varUint authored.logical
 * u8        flags (bit 0 message, bit 1 meta)
 * [varString message] [varString meta]
 * raw32     SHA-256 of the delta bytes
 * ```
 *
 * A record's signature covers the change as every peer logs it: the author
 * id, its HLC when it made the change (`authored`, else the record's own
 * time at the author), message and meta, and the delta's hash, so a relay
 * that changes any of them, or replays the signature with other bytes,
 * fails verification.
 */
import { type Decoder, Encoder, bytesEqual } from './codec.ts'
import { DecodeError } from './errors.ts'
import type { HlcTimestamp } from './hlc.ts'

/** Domain-separation prefix of the signed bytes. */
export const SIGNATURE_DOMAIN = 'concord-record-signature'
/** Version of the signed encoding. */
export const SIGNATURE_VERSION = 1
/** Bytes of an Ed25519 signature. */
export const SIGNATURE_BYTES = 64
/** Bytes of an Ed25519 public key. */
export const PUBLIC_KEY_BYTES = 32

/** An author's signature of one record, with its public key unless the author id names it. */
export interface RecordSignature {
  /** Ed25519 signature (64 bytes) of {@link signedBytes}. */
  readonly signature: Uint8Array
  /** Ed25519 public key (32 bytes); absent when the author id is the key's PeerId. */
  readonly publicKey?: Uint8Array | undefined
}

/** What a record's signature covers. */
export interface SignedFields {
  readonly name: string
  readonly type: string
  readonly agent: string
  /** The author's HLC when it made the change. */
  readonly authored: HlcTimestamp
  readonly message?: string | undefined
  readonly metaJson?: string | undefined
  /** SHA-256 of the delta bytes (32 bytes). */
  readonly deltaHash: Uint8Array
}

/** The canonical bytes an author signs for one record. */
export function signedBytes(fields: SignedFields): Uint8Array {
  if (fields.deltaHash.length !== 32) throw new RangeError('deltaHash must be 32 bytes')
  const encoder = new Encoder(96 + fields.name.length + fields.agent.length)
  encoder.writeString(SIGNATURE_DOMAIN).writeUint8(SIGNATURE_VERSION)
  encoder.writeString(fields.name).writeString(fields.type).writeString(fields.agent)
  encoder.writeVarUint(fields.authored.wall).writeVarUint(fields.authored.logical)
  encoder.writeUint8((fields.message !== undefined ? 1 : 0) | (fields.metaJson !== undefined ? 2 : 0))
  if (fields.message !== undefined) encoder.writeString(fields.message)
  if (fields.metaJson !== undefined) encoder.writeString(fields.metaJson)
  encoder.writeRaw(fields.deltaHash)
  return encoder.finish()
}

/** Checks the sizes of a signature read from bytes; `DecodeError` otherwise. */
export function checkSignatureShape(signature: RecordSignature): RecordSignature {
  if (!(signature.signature instanceof Uint8Array) || signature.signature.length !== SIGNATURE_BYTES) {
    throw new DecodeError(`a signature has ${SIGNATURE_BYTES} bytes`)
  }
  if (signature.publicKey !== undefined && (!(signature.publicKey instanceof Uint8Array) || signature.publicKey.length !== PUBLIC_KEY_BYTES)) {
    throw new DecodeError(`a public key has ${PUBLIC_KEY_BYTES} bytes`)
  }
  return signature
}

// ---- PeerIds: an Ed25519 public key as libp2p names it ---------------------

/** Identity multihash of the protobuf `PublicKey { Type: Ed25519, Data: 32 bytes }`. */
const PEER_ID_PREFIX = Uint8Array.of(0x00, 0x24, 0x08, 0x01, 0x12, 0x20)
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const BASE58_INDEX = new Map([...BASE58].map((char, i) => [char, i]))

/**
 * The Ed25519 public key a libp2p PeerId string (`12D3KooW...`, base58btc of
 * the identity multihash) names, or undefined when `id` is not one.
 */
export function publicKeyOfPeerId(id: string): Uint8Array | undefined {
  if (typeof id !== 'string' || id.length < 46 || id.length > 60 || !id.startsWith('12D3KooW')) return undefined
  const bytes = base58Decode(id)
  if (bytes === undefined || bytes.length !== PEER_ID_PREFIX.length + PUBLIC_KEY_BYTES) return undefined
  if (!bytesEqual(bytes.subarray(0, PEER_ID_PREFIX.length), PEER_ID_PREFIX)) return undefined
  return bytes.slice(PEER_ID_PREFIX.length)
}

/** The libp2p PeerId string of an Ed25519 public key (32 bytes). */
export function peerIdOfPublicKey(publicKey: Uint8Array): string {
  if (publicKey.length !== PUBLIC_KEY_BYTES) throw new RangeError(`a public key has ${PUBLIC_KEY_BYTES} bytes`)
  const bytes = new Uint8Array(PEER_ID_PREFIX.length + PUBLIC_KEY_BYTES)
  bytes.set(PEER_ID_PREFIX)
  bytes.set(publicKey, PEER_ID_PREFIX.length)
  return base58Encode(bytes)
}

function base58Decode(text: string): Uint8Array | undefined {
  const digits: number[] = [0]
  for (const char of text) {
    let carry = BASE58_INDEX.get(char)
    if (carry === undefined) return undefined
    for (let i = 0; i < digits.length; i++) {
      const value: number = digits[i] * 58 + carry
      digits[i] = value & 0xff
      carry = value >> 8
    }
    while (carry > 0) {
      digits.push(carry & 0xff)
      carry >>= 8
    }
  }
  let zeros = 0
  while (zeros < text.length && text[zeros] === '1') zeros++
  // `digits` holds the number little-endian; a leading "1" is a zero byte.
  while (digits.length > 1 && digits[digits.length - 1] === 0) digits.pop()
  const value = digits.length === 1 && digits[0] === 0 ? [] : digits.reverse()
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...value])
}

function base58Encode(bytes: Uint8Array): string {
  const digits: number[] = [0]
  for (const byte of bytes) {
    let carry = byte
    for (let i = 0; i < digits.length; i++) {
      const value = digits[i] * 256 + carry
      digits[i] = value % 58
      carry = Math.floor(value / 58)
    }
    while (carry > 0) {
      digits.push(carry % 58)
      carry = Math.floor(carry / 58)
    }
  }
  let out = ''
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) out += '1'
  for (let i = digits.length - 1; i >= 0; i--) if (!(i === digits.length - 1 && digits[i] === 0 && digits.length > 1)) out += BASE58[digits[i]]
  return out
}

/** Reads a signature written by {@link writeSignature}. */
export function readSignature(decoder: Decoder, withKey: boolean): RecordSignature {
  const signature = decoder.readRaw(SIGNATURE_BYTES).slice()
  const publicKey = withKey ? decoder.readRaw(PUBLIC_KEY_BYTES).slice() : undefined
  return publicKey === undefined ? { signature } : { signature, publicKey }
}

/** Writes `signature` (raw64) then its public key (raw32) when it has one. */
export function writeSignature(encoder: Encoder, signature: RecordSignature): void {
  encoder.writeRaw(signature.signature)
  if (signature.publicKey !== undefined) encoder.writeRaw(signature.publicKey)
}
