/**
 * Options of the document replicas (Yjs, Automerge): the shared
 * {@link ReplicaOptions} plus per-document settings and the limits the input
 * guards enforce on untrusted bytes.
 */
import type { ReplicaOptions } from '../replica.ts'

/** Bounds every untrusted update, delta or snapshot must respect. */
export interface DocumentLimits {
  /** Largest update, delta or snapshot accepted, in bytes (default 64 MiB). */
  readonly maxBytes: number
  /** Deepest nesting of arrays/objects inside one Yjs `ContentAny` value (default 64). */
  readonly maxNesting: number
  /**
   * Most operations one delta may decode to (default 1,000,000): Yjs structs
   * plus delete ranges; Automerge op rows (one per inserted character), plus
   * change rows in a document chunk. Read from the bytes before the library
   * runs; over it, `CONCORD_LIMIT_EXCEEDED`. Snapshots are not bounded by it.
   */
  readonly maxOperations: number
  /**
   * Most bytes of content (strings, values, binaries) one delta may decode
   * to (default 64 MiB), Automerge's deflated document columns inflated.
   */
  readonly maxInsertedBytes: number
  /**
   * Most updates of one document held while they wait for a missing
   * dependency (default 1,000); more are dropped (counted in `waitingStats`)
   * and come again by anti-entropy.
   */
  readonly maxWaitingUpdates: number
  /** Most bytes of such waiting updates of one document (default 8 MiB). */
  readonly maxWaitingBytes: number
}

/** The limits used when none are given. */
export const DEFAULT_DOCUMENT_LIMITS: DocumentLimits = Object.freeze({
  maxBytes: 64 * 1024 * 1024,
  maxNesting: 64,
  maxOperations: 1_000_000,
  maxInsertedBytes: 64 * 1024 * 1024,
  maxWaitingUpdates: 1000,
  maxWaitingBytes: 8 * 1024 * 1024,
})

/**
 * Limits for bytes this process wrote itself (its own log and checkpoints):
 * the framing limits as given, no bound on the decoded size (a local change
 * or a logged state may be larger than what a peer may send in one delta).
 */
export function trustedLimits(limits?: Partial<DocumentLimits>): DocumentLimits {
  // Frozen: every replica a store makes takes this object as it is (see resolveLimits).
  return Object.freeze({ ...resolveLimits(limits), maxOperations: Infinity, maxInsertedBytes: Infinity })
}

/**
 * `own` with `extra` on top: the stricter of the two for every bound (a
 * replica's own limits and those a holder puts on one untrusted delta).
 */
export function stricterLimits(own: DocumentLimits, extra: Partial<DocumentLimits> | undefined): DocumentLimits {
  if (extra === undefined) return own
  // A holder passes the same objects with every delta (a store: its replicas' limits, its remote limits): computed once.
  const frozen = Object.isFrozen(own) && Object.isFrozen(extra)
  if (frozen) {
    const known = stricterMemo.get(extra)?.get(own)
    if (known) return known
  }
  const out = { ...own }
  for (const key of Object.keys(own) as Array<keyof DocumentLimits>) {
    const bound = extra[key]
    if (typeof bound === 'number' && bound < out[key]) out[key] = bound
  }
  if (!frozen) return out
  Object.freeze(out)
  let byOwn = stricterMemo.get(extra)
  if (!byOwn) stricterMemo.set(extra, (byOwn = new WeakMap()))
  byOwn.set(own, out)
  return out
}

/** {@link stricterLimits} of frozen limits, by `extra` then `own` (the result is frozen too). */
const stricterMemo = new WeakMap<Partial<DocumentLimits>, WeakMap<DocumentLimits, DocumentLimits>>()

/**
 * Fills the limits not given with the defaults. No limits, or frozen ones
 * that give every bound, are returned as they are (no copy per replica: a
 * store's replicas share one object).
 */
export function resolveLimits(limits?: Partial<DocumentLimits>): DocumentLimits {
  if (limits === undefined) return DEFAULT_DOCUMENT_LIMITS
  if (Object.isFrozen(limits) && isComplete(limits)) return limits
  return { ...DEFAULT_DOCUMENT_LIMITS, ...limits }
}

function isComplete(limits: Partial<DocumentLimits>): limits is DocumentLimits {
  for (const key in DEFAULT_DOCUMENT_LIMITS) if (typeof limits[key as keyof DocumentLimits] !== 'number') return false
  return true
}

/** The kind of a top-level Yjs type, used to read it without guessing. */
export type YjsTopLevelKind = 'text' | 'map' | 'array' | 'xml'

/** Options of a Yjs replica. */
export interface YjsReplicaOptions extends ReplicaOptions {
  /**
   * Yjs garbage collection of deleted content (default `true`; keep `false`
   * when you need Yjs snapshots of past versions). Stored in the snapshot: a
   * replica loaded from a snapshot keeps its setting unless this overrides it.
   */
  readonly gc?: boolean | undefined
  /**
   * Declared top-level types, by name. They are created at once with their
   * Yjs class, so `value()` and `restore()` read them exactly. Top-level
   * types that arrive only through remote updates and were never declared
   * or opened locally are read by inference (see `YjsReplica.value`).
   */
  readonly types?: Readonly<Record<string, YjsTopLevelKind>> | undefined
  /** Limits enforced on every delta and snapshot this replica accepts. */
  readonly limits?: Partial<DocumentLimits> | undefined
  /**
   * The Yjs client id (default: random, as Yjs does). Only for reproducible
   * tests and trace replays: concurrent inserts at one place are ordered by
   * client id. Two sessions that edit must never share a client id.
   */
  readonly clientId?: number | undefined
}

/** Options of an Automerge replica. */
export interface AutomergeReplicaOptions<T = unknown> extends ReplicaOptions {
  /**
   * Initial value of a new document (ignored when `snapshot` is given). Made
   * by one change with a fixed actor, so that every replica created with the
   * same initial value shares it instead of conflicting.
   */
  readonly initial?: T | undefined
  /** Limits enforced on every delta and snapshot this replica accepts. */
  readonly limits?: Partial<DocumentLimits> | undefined
  /**
   * The Automerge actor id, hex (default: random). Only for reproducible
   * tests and trace replays; two sessions that edit must never share one.
   */
  readonly actor?: string | undefined
}
