/**
 * The signature options of a peer (issue 16, "Trust"): the key that signs
 * its own records (`signingKey`, else its libp2p key when it is given and
 * Ed25519), the keys of other authors (`authorKeys`, and the PeerIds of
 * `libp2p.identities`) and whether remote changes must prove their author
 * (`requireSignatures`); made into the store's (persistence/signing.ts).
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { publicKeyOfPeerId } from '../crdt/signature.ts'
import type { SignatureOptions } from '../persistence/signing.ts'

/**
 * An Ed25519 private key: a libp2p `PrivateKey` of type `Ed25519` (from
 * `generateKeyPair('Ed25519')` or `privateKeyFromProtobuf` of
 * `@libp2p/crypto/keys`), or its 32-byte seed (RFC 8032's private key).
 */
export type SigningKey = Uint8Array | { readonly type: string; readonly raw: Uint8Array }

/** What a peer's options say about signatures. */
export interface PeerSignatureOptions {
  readonly signingKey?: SigningKey | undefined
  readonly authorKeys?: Readonly<Record<string, string>> | undefined
  readonly requireSignatures?: boolean | undefined
  readonly libp2p?: { readonly identities?: Readonly<Record<string, string>> | undefined; readonly privateKey?: unknown } | undefined
}

/** The 32-byte seed of a signing key; `CONCORD_INVALID_ARGUMENT` when it is not an Ed25519 private key. */
export function signingSeed(key: unknown, where = 'createPeer: signingKey'): Uint8Array {
  if (key instanceof Uint8Array && key.length === 32) return key.slice()
  if (key !== null && typeof key === 'object' && !(key instanceof Uint8Array)) {
    const { type, raw } = key as { type?: unknown; raw?: unknown }
    // libp2p's Ed25519 private key: 64 bytes, the seed then the public key.
    if (type === 'Ed25519' && raw instanceof Uint8Array && (raw.length === 64 || raw.length === 32)) return raw.slice(0, 32)
  }
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where} must be an Ed25519 private key: a libp2p PrivateKey of type Ed25519, or its 32-byte seed`)
}

/** The store's signature options of a peer's options; `CONCORD_INVALID_ARGUMENT` for a bad key or author key. */
export function peerSignatureOptions(options: PeerSignatureOptions): SignatureOptions | undefined {
  const libp2pKey = options.libp2p?.privateKey as { type?: unknown } | undefined
  const key =
    options.signingKey !== undefined ? signingSeed(options.signingKey) : libp2pKey?.type === 'Ed25519' ? signingSeed(libp2pKey, 'libp2p.privateKey') : undefined
  const authors = new Map<string, Uint8Array>()
  // libp2p.identities first: an Ed25519 PeerId names its key (other key types are left out); authorKeys win.
  for (const [id, peerId] of Object.entries(options.libp2p?.identities ?? {})) {
    const publicKey = publicKeyOfPeerId(peerId)
    if (publicKey) authors.set(id, publicKey)
  }
  const given = options.authorKeys
  if (given !== undefined) {
    if (given === null || typeof given !== 'object' || Array.isArray(given)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: authorKeys must be an object { authorId: Ed25519 PeerId }')
    }
    for (const [id, peerId] of Object.entries(given)) {
      const publicKey = typeof peerId === 'string' ? publicKeyOfPeerId(peerId) : undefined
      if (!publicKey) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `createPeer: authorKeys["${id}"] must be the PeerId of an Ed25519 key (12D3KooW...)`)
      }
      authors.set(id, publicKey)
    }
  }
  if (options.requireSignatures !== undefined && typeof options.requireSignatures !== 'boolean') {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: requireSignatures must be a boolean')
  }
  if (key === undefined && authors.size === 0 && options.requireSignatures !== true) return undefined
  return {
    key,
    authorKey: authors.size > 0 ? (agent) => authors.get(agent) : undefined,
    required: options.requireSignatures === true,
  }
}
