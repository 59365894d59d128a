/**
 * Version tokens: what `read` hands out and a conditional write gives back
 * (`ifVersion`). A token is `v1.<seq>.<fingerprint>`: the log seq the
 * replica was exactly at when read (`_` when it could not be pinned), and
 * 20 hex digits of SHA-256 over the replica's type and its version (for a
 * Yjs document, its state vector and delete set: a deletion changes no
 * state vector). A write whose token's fingerprint differs from the
 * current one was made on a stale view; the seq is where the diff of what
 * changed starts (and, for text edits, where positions are mapped from).
 */
import { createHash } from 'node:crypto'
import * as Y from 'yjs'
import type { Replica } from '../crdt/replica.ts'
import type { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import type { Store } from '../persistence/store.ts'
import { invalid } from './errors.ts'

/** A decoded token. */
export interface VersionToken {
  /** The seq the read state was exactly at, or undefined. */
  readonly seq: number | undefined
  readonly fingerprint: string
}

const TOKEN = /^v1\.(\d{1,15}|_)\.([0-9a-f]{20})$/

/** The fingerprint of a replica's current state. */
export function fingerprint(replica: Replica): string {
  const hash = createHash('sha256')
    .update(replica.type)
    .update(new Uint8Array([0]))
  if (replica.type === 'yjs') hash.update(Y.encodeSnapshot(Y.snapshot((replica as YjsReplica).doc)))
  else hash.update(replica.version())
  return hash.digest('hex').slice(0, 20)
}

/** Encodes a token. */
export function encodeToken(token: VersionToken): string {
  return `v1.${token.seq ?? '_'}.${token.fingerprint}`
}

/** Decodes a token given by a client; `CONCORD_INVALID_ARGUMENT` when it is not one. */
export function decodeToken(text: string): VersionToken {
  const match = TOKEN.exec(text)
  if (!match) throw invalid('ifVersion is not a version token (use the "version" a read or a write returned)')
  return { seq: match[1] === '_' ? undefined : Number(match[1]), fingerprint: match[2] }
}

/**
 * Reads `replica` (the store's live replica of `name`) pinned to a token:
 * everything written is flushed first, then `read` runs in the same turn
 * as the token is taken, so the value read is exactly the state the token's
 * seq names; if changes keep arriving, the seq is left out.
 */
export async function pinned<T>(store: Store, name: string, replica: Replica, read: () => T): Promise<{ token: VersionToken; value: T }> {
  for (let attempt = 0; attempt < 4; attempt++) {
    await store.flush()
    const seq = store.settledSeq(name)
    if (seq !== undefined) return { token: { seq, fingerprint: fingerprint(replica) }, value: read() }
  }
  return { token: { seq: undefined, fingerprint: fingerprint(replica) }, value: read() }
}
