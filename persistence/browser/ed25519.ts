/**
 * Ed25519 in a browser, from @noble/curves (synchronous, as the log needs
 * it; WebCrypto's Ed25519 is asynchronous and not in every browser). Same
 * exports and results as persistence/format/ed25519.ts, which a bundler
 * building for the browser replaces with this module.
 */
import { ed25519 } from '@noble/curves/ed25519.js'

/** The public key (32 bytes) of an Ed25519 private key given as its 32-byte seed. */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  return ed25519.getPublicKey(seed)
}

/** Signs `message` with the Ed25519 private key `seed` (32 bytes); 64 bytes. */
export function ed25519Sign(seed: Uint8Array, message: Uint8Array): Uint8Array {
  return ed25519.sign(message, seed)
}

/** Whether `signature` is `publicKey`'s Ed25519 signature of `message` (false for malformed input). */
export function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false
  try {
    return ed25519.verify(signature, message, publicKey)
  } catch {
    return false
  }
}
