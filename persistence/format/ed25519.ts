/**
 * Ed25519 in Node, from node:crypto (native: about 36 µs a signature and
 * 110 µs a verification on the shared VM, against 0.9 and 1.8 ms for
 * @noble/curves). A bundler building for the browser takes
 * persistence/browser/ed25519.ts instead (package.json `browser`): the same
 * functions over @noble/curves. test/history/signatures.test.ts checks that
 * both give the same bytes.
 */
import * as crypto from 'node:crypto'

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), before the 32 key bytes. */
const SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00])
/** DER prefix of an Ed25519 PKCS #8 private key, before the 32 seed bytes. */
const PKCS8_PREFIX = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20])

const publicKeys = new Map<string, crypto.KeyObject>()
const privateKeys = new WeakMap<Uint8Array, crypto.KeyObject>()

function publicKeyObject(publicKey: Uint8Array): crypto.KeyObject {
  const id = Buffer.from(publicKey.buffer, publicKey.byteOffset, publicKey.byteLength).toString('base64')
  let key = publicKeys.get(id)
  if (!key) {
    if (publicKeys.size >= 1024) publicKeys.clear()
    key = crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' })
    publicKeys.set(id, key)
  }
  return key
}

function privateKeyObject(seed: Uint8Array): crypto.KeyObject {
  let key = privateKeys.get(seed)
  if (!key) {
    key = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' })
    privateKeys.set(seed, key)
  }
  return key
}

/** The public key (32 bytes) of an Ed25519 private key given as its 32-byte seed. */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  const jwk = crypto.createPublicKey(privateKeyObject(seed)).export({ format: 'jwk' })
  return new Uint8Array(Buffer.from(jwk.x as string, 'base64url'))
}

/** Signs `message` with the Ed25519 private key `seed` (32 bytes); 64 bytes. */
export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  const signature = crypto.sign(null, message, privateKeyObject(seed))
  return new Uint8Array(signature.buffer, signature.byteOffset, signature.byteLength)
}

/** Whether `signature` is `publicKey`'s Ed25519 signature of `message` (false for malformed input). */
export function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false
  try {
    return crypto.verify(null, message, publicKeyObject(publicKey), signature)
  } catch {
    return false
  }
}
