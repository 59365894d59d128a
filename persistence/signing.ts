/**
 * The store's signatures (issue 16, "Trust"): it signs the records of its
 * own changes with its Ed25519 key, checks the signatures of the records it
 * is given, and says of a stored record whether its signature verifies and
 * whose key made it (crdt/signature.ts: what is signed).
 *
 * Whose key an author id is ({@link Signatures.boundKey}): this store's own
 * id is its key's; an id given a key by the peer (`authorKeys`,
 * `libp2p.identities`) is that key's; an id that is an Ed25519 PeerId
 * (`12D3KooW...`) is the key it names. Any other author has no known key:
 * a signature of its records still has to verify with the key that travels
 * with it, and is reported `unbound` (nothing says that key is the
 * author's).
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { bytesEqual } from '../crdt/codec.ts'
import type { HlcTimestamp } from '../crdt/hlc.ts'
import { peerIdOfPublicKey, publicKeyOfPeerId, type RecordSignature, type SignedFields, signedBytes } from '../crdt/signature.ts'
import { sha256 } from './format/checksum.ts'
import { ed25519PublicKey, ed25519Sign, ed25519Verify } from './format/ed25519.ts'

/** Signature options of a store (`openStore({ signatures })`). */
export interface SignatureOptions {
  /** The Ed25519 private key (its 32-byte seed) the store signs its own records with. */
  readonly key?: Uint8Array | undefined
  /** The public key (32 bytes) bound to an author id, if the caller knows one. */
  readonly authorKey?: ((agent: string) => Uint8Array | undefined) | undefined
  /**
   * Refuse remote changes whose claimed author is not proved: unsigned, or
   * signed by a key nothing binds to the author (default false: only
   * authors with a known key must sign).
   */
  readonly required?: boolean | undefined
}

/** Whether a record's signature verifies (`verified`: by its author's known key; `unbound`: by a key nothing binds to the author; `invalid`: it does not verify, or not with the author's key). */
export type SignatureStatus = 'verified' | 'unbound' | 'invalid'

/** A record's signature as `history` shows it. */
export interface SignatureInfo {
  readonly status: SignatureStatus
  /** The signing key as a PeerId (`12D3KooW...`). */
  readonly signer: string
}

/** What a record's signature covers, but the delta's hash. */
export type RecordFields = Omit<SignedFields, 'deltaHash'>

/** @internal see the module comment. */
export class Signatures {
  /** This store's public key, when it signs. */
  readonly publicKey: Uint8Array | undefined
  private readonly seed: Uint8Array | undefined
  private readonly ownIdNamesKey: boolean

  constructor(
    private readonly ownId: string,
    private readonly options: SignatureOptions = {},
  ) {
    const key = options.key
    if (key !== undefined && (!(key instanceof Uint8Array) || key.length !== 32)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'signatures.key must be an Ed25519 private key: its 32-byte seed')
    }
    this.seed = key?.slice()
    this.publicKey = this.seed && ed25519PublicKey(this.seed)
    const named = publicKeyOfPeerId(ownId)
    if (this.publicKey && named && !bytesEqual(named, this.publicKey)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `the id "${ownId}" is the PeerId of another key than the signing key`)
    }
    this.ownIdNamesKey = named !== undefined
  }

  /** Whether the store signs records whose author is `agent` (its own, when it has a key). */
  signs(agent: string): boolean {
    return this.seed !== undefined && agent === this.ownId
  }

  /** Whether remote changes must prove their author (`required`). */
  get required(): boolean {
    return this.options.required === true
  }

  /** The public key bound to `agent`, if one is known (see the module comment). */
  boundKey(agent: string): Uint8Array | undefined {
    if (agent === this.ownId && this.publicKey) return this.publicKey
    let given: Uint8Array | undefined
    try {
      given = this.options.authorKey?.(agent)
    } catch {
      given = undefined
    }
    return given ?? publicKeyOfPeerId(agent)
  }

  /** Signs one of this store's records. */
  sign(fields: RecordFields, delta: Uint8Array): RecordSignature {
    if (!this.seed) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'this store has no signing key')
    const signature = ed25519Sign(this.seed, signedBytes({ ...fields, deltaHash: sha256(delta) }))
    return this.ownIdNamesKey ? { signature } : { signature, publicKey: this.publicKey }
  }

  /** The status of a record's signature (see {@link SignatureStatus}) and the key that made it. */
  status(fields: RecordFields, delta: Uint8Array, signature: RecordSignature): SignatureInfo {
    const key = signature.publicKey ?? publicKeyOfPeerId(fields.agent)
    if (key === undefined) return { status: 'invalid', signer: '' }
    const signer = peerIdOfPublicKey(key)
    if (!ed25519Verify(key, signedBytes({ ...fields, deltaHash: sha256(delta) }), signature.signature)) return { status: 'invalid', signer }
    const bound = this.boundKey(fields.agent)
    if (bound === undefined) return { status: 'unbound', signer }
    return { status: bytesEqual(bound, key) ? 'verified' : 'invalid', signer }
  }

  /**
   * Checks a remote change before it is applied: a signature must verify
   * and be by the author's key when one is known. When `claimed` (the
   * sender names the author: a PROVENANCE), an author with a known key
   * must have signed, and with `required` every author must have, with a
   * key bound to it. Throws `CONCORD_BAD_SIGNATURE` otherwise.
   */
  check(fields: RecordFields, delta: Uint8Array, signature: RecordSignature | undefined, claimed: boolean): SignatureStatus | 'unsigned' {
    if (signature === undefined) {
      if (!claimed) return 'unsigned'
      if (this.boundKey(fields.agent) !== undefined) {
        throw badSignature(`"${fields.name}": the change claims author "${fields.agent}", whose key is known, and is not signed`)
      }
      if (this.required) throw badSignature(`"${fields.name}": the change claims author "${fields.agent}" and is not signed (signatures are required)`)
      return 'unsigned'
    }
    const { status, signer } = this.status(fields, delta, signature)
    if (status === 'invalid') {
      throw badSignature(
        signer === ''
          ? `"${fields.name}": the signature carries no key and "${fields.agent}" names none`
          : `"${fields.name}": the signature does not verify as author "${fields.agent}"'s (signed by ${signer})`,
      )
    }
    if (status === 'unbound' && this.required) {
      throw badSignature(`"${fields.name}": nothing binds the signing key ${signer} to author "${fields.agent}" (signatures are required)`)
    }
    return status
  }
}

function badSignature(message: string): ConcordError {
  return new ConcordError(ErrorCodes.BAD_SIGNATURE, message)
}

/** What a stored record's signature covers (`type`: its name's). */
export function recordFields(
  record: {
    readonly name: string
    readonly agent: string
    readonly hlc: HlcTimestamp
    readonly authored?: HlcTimestamp | undefined
    readonly message?: string | undefined
    readonly metaJson?: string | undefined
  },
  type: string,
): RecordFields {
  return { name: record.name, type, agent: record.agent, authored: record.authored ?? record.hlc, message: record.message, metaJson: record.metaJson }
}

/** The signature of a stored record as `history` shows it, or undefined when it is unsigned. */
export function signatureOf(
  signatures: Signatures,
  record: Parameters<typeof recordFields>[0] & { readonly delta: Uint8Array; readonly signature?: RecordSignature | undefined },
  type: string,
): SignatureInfo | undefined {
  return record.signature && signatures.status(recordFields(record, type), record.delta, record.signature)
}
