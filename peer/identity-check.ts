/**
 * Whether the ids remote peers claim mean something. `access` grants rights
 * by agent id, and the id is what a remote claims in its HELLO; only a
 * per-peer credential proves the claim (a per-peer secret, or over libp2p
 * a PeerId bound to the id). With one shared secret, or none, any peer can
 * claim another's id and get its access, so `createPeer` refuses that set-up
 * unless the user says `access` does not depend on the id
 * (`auth.trustClaimedIds`). See README, "Identities".
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { CredentialCheck, PeerOptions } from './options.ts'

/**
 * What proves the id a remote claims: `secret` (a per-peer secret, on every
 * transport), `libp2p` (only `libp2p.identities`: libp2p sessions only),
 * `unchecked` (nothing, and `access` does not care: no `access`, or
 * `trustClaimedIds`).
 */
export type IdentityProof = 'secret' | 'libp2p' | 'unchecked'

/**
 * Checks `auth` and `libp2p.identities` against `access`, and says what
 * proves a claimed id.
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT` when `access` is given and
 * nothing tells peers apart, or the credentials are malformed; the message
 * says how to fix it.
 */
export function checkIdentities(options: PeerOptions): IdentityProof {
  const auth = options.auth
  const accept = auth?.accept ?? auth?.token
  validateCheck(auth?.accept, 'auth.accept')
  validateCheck(auth?.acceptDialed, 'auth.acceptDialed')
  if (auth?.token !== undefined && (typeof auth.token !== 'string' || auth.token.length === 0)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: auth.token must be a non-empty string')
  }
  const shared = sharedSecrets(accept)
  if (shared === undefined) return 'secret'
  if (options.access === undefined || auth?.trustClaimedIds === true) return 'unchecked'
  const identities = options.libp2p?.identities
  if (shared.kind !== 'duplicate' && identities !== undefined && Object.keys(identities).length > 0) return 'libp2p'
  let problem: string
  if (shared.kind === 'duplicate') problem = `peers "${shared.a}" and "${shared.b}" share one secret in auth.accept`
  else if (shared.kind === 'none') problem = 'this peer requires no credentials (no auth.accept, no auth.token)'
  else
    problem = auth?.accept === undefined ? 'auth.token is one secret shared by every peer (no auth.accept)' : 'auth.accept is one secret shared by every peer'
  throw new ConcordError(
    ErrorCodes.INVALID_ARGUMENT,
    `createPeer: access grants rights by agent id, but ${problem}: any peer can claim another's id and get its access. ` +
      'Give each peer its own secret (auth.accept: { agentId: secret }, or a lookup (agentId) => secret), ' +
      'or bind ids to libp2p PeerIds (libp2p.identities, libp2p only), ' +
      'or, if access does not depend on the agent id, set auth.trustClaimedIds: true.',
  )
}

/** Why a credential check cannot tell peers apart, or undefined when it can. */
function sharedSecrets(
  check: CredentialCheck | undefined,
): { readonly kind: 'none' | 'shared' } | { readonly kind: 'duplicate'; readonly a: string; readonly b: string } | undefined {
  if (check === undefined) return { kind: 'none' }
  if (typeof check === 'string') return { kind: 'shared' }
  if (typeof check === 'function') return undefined
  const owner = new Map<string, string>()
  for (const [peer, secret] of Object.entries(check)) {
    const first = owner.get(secret)
    if (first !== undefined) return { kind: 'duplicate', a: first, b: peer }
    owner.set(secret, peer)
  }
  return undefined
}

function validateCheck(check: unknown, where: string): void {
  if (check === undefined || typeof check === 'function') return
  if (typeof check === 'string') {
    if (check.length === 0) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `createPeer: ${where} must be a non-empty secret`)
    return
  }
  if (check === null || typeof check !== 'object' || Array.isArray(check)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `createPeer: ${where} must be a secret, a { agentId: secret } table or a lookup (agentId) => secret`)
  }
  for (const [peer, secret] of Object.entries(check)) {
    if (typeof secret !== 'string' || secret.length === 0) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `createPeer: ${where}: the secret of "${peer}" must be a non-empty string`)
    }
  }
}
