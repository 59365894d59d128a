/**
 * The credentials of the handshake (sync/PROTOCOL.md, "Credentials"): the
 * fresh nonce each side puts in its HELLO, the proof each side sends in AUTH
 * (HMAC-SHA-256 keyed by its secret over both nonces, both agent ids, the
 * protocol version and the connection's binding), and how a receiver checks
 * what a remote presented against the secret it expects. Pure: @noble/hashes,
 * which runs in browsers; no Node crypto.
 */
import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { randomBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { Encoder } from '../crdt/codec.ts'
import type { HelloMessage } from './messages.ts'

/** Bytes of the nonce of a HELLO (protocol 2). */
export const NONCE_BYTES = 32
/** Bytes of an AUTH proof (HMAC-SHA-256). */
export const PROOF_BYTES = 32
/** HELLO extension key that carries the nonce. */
export const NONCE_EXTENSION = 'nonce'
/** First field of every proof's input: what the MAC is for. */
const PROOF_LABEL = 'concord-sync-auth'

/**
 * What a remote presented, as the host checks it:
 * - `none`: nothing (an empty AUTH; or a protocol-1 HELLO whose clear token
 *   this side does not accept);
 * - `bearer`: a protocol-1 token, sent in the clear in HELLO (accepted only
 *   with `legacyBearer`);
 * - `proof`: a protocol-2 proof; `verify(secret)` says whether the remote
 *   holds `secret` (the token itself never travelled).
 */
export type PresentedCredentials =
  | { readonly scheme: 'none' }
  | { readonly scheme: 'bearer'; readonly token: string }
  | { readonly scheme: 'proof'; verify(secret: string): boolean }

/** The inputs of one side's proof. Each side proves over its own nonce and id first. */
export interface ProofInput {
  readonly version: number
  readonly proverId: string
  readonly verifierId: string
  readonly proverNonce: Uint8Array
  readonly verifierNonce: Uint8Array
  /** Bytes both ends of the connection see alike and a relay cannot (libp2p: both PeerIds); empty when none. */
  readonly binding: Uint8Array
}

/** A fresh random nonce (the platform's CSPRNG, `crypto.getRandomValues`). */
export function newNonce(): Uint8Array {
  return randomBytes(NONCE_BYTES)
}

/** The nonce of a HELLO, or undefined when it has none of the right length. */
export function helloNonce(hello: HelloMessage): Uint8Array | undefined {
  const extension = hello.extensions.find((e) => e.key === NONCE_EXTENSION)
  return extension?.value.length === NONCE_BYTES ? extension.value : undefined
}

/**
 * HMAC-SHA-256 keyed by `secret` (UTF-8) over the label, the version, the
 * prover's then the verifier's nonce and id, and the binding, each
 * length-prefixed so that no two inputs encode alike.
 */
export function handshakeProof(secret: string, input: ProofInput): Uint8Array {
  const message = new Encoder(160)
    .writeString(PROOF_LABEL)
    .writeVarUint(input.version)
    .writeBytes(input.proverNonce)
    .writeBytes(input.verifierNonce)
    .writeString(input.proverId)
    .writeString(input.verifierId)
    .writeBytes(input.binding)
    .finish()
  return hmac(sha256, utf8ToBytes(secret), message)
}

/** Whether two byte strings are equal, in time that depends only on their lengths. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i]
  return diff === 0
}

/** Whether two secrets are equal, in time independent of where they differ (hashed first, so lengths leak nothing). */
export function secretsEqual(a: string, b: string): boolean {
  return constantTimeEqual(sha256(utf8ToBytes(a)), sha256(utf8ToBytes(b)))
}

/** Whether `presented` proves the remote holds `expected` (`undefined`: no secret known for it, refused). */
export function provesSecret(presented: PresentedCredentials, expected: string | undefined): boolean {
  if (typeof expected !== 'string' || expected.length === 0) return false
  switch (presented.scheme) {
    case 'none':
      return false
    case 'bearer':
      return secretsEqual(expected, presented.token)
    case 'proof':
      return presented.verify(expected)
  }
}
