/**
 * Typed errors with stable codes, shared by every layer of Concord.
 *
 * Every error Concord throws on purpose is a {@link ConcordError}; callers
 * branch on `error.code`, never on the message. The codes are part of the
 * public API and are listed in the README; never rename one.
 */

/** Every stable error code Concord uses. */
export const ErrorCodes = {
  /** Bytes that do not decode: wrong version, truncated, bit-flipped, over a limit. */
  DECODE_ERROR: 'CONCORD_DECODE_ERROR',
  /** A name was opened as another type than the one it was created with. */
  TYPE_MISMATCH: 'CONCORD_TYPE_MISMATCH',
  /** A stored record failed its checksum or hash chain. */
  CORRUPT_RECORD: 'CONCORD_CORRUPT_RECORD',
  /** A format or protocol version newer than this code understands. */
  UNSUPPORTED_VERSION: 'CONCORD_UNSUPPORTED_VERSION',
  /** An argument outside what the API accepts. */
  INVALID_ARGUMENT: 'CONCORD_INVALID_ARGUMENT',
  /** Input larger than a configured limit. */
  LIMIT_EXCEEDED: 'CONCORD_LIMIT_EXCEEDED',
  /** An operation on something already closed or stopped. */
  CLOSED: 'CONCORD_CLOSED',
  /** An operation aborted through its `signal`. */
  ABORTED: 'CONCORD_ABORTED',
  /** An operation that did not finish within its timeout. */
  TIMEOUT: 'CONCORD_TIMEOUT',
  /** A storage read or write failed (disk full, EIO, ...). */
  STORAGE_ERROR: 'CONCORD_STORAGE_ERROR',
  /** The data folder is held by another process. */
  LOCKED: 'CONCORD_LOCKED',
  /** Stored data written by a newer schema than the registered migrations know. */
  SCHEMA_TOO_NEW: 'CONCORD_SCHEMA_TOO_NEW',
  /** A migration failed or is missing. */
  MIGRATION_FAILED: 'CONCORD_MIGRATION_FAILED',
  /** The name does not exist (or has expired). */
  NOT_FOUND: 'CONCORD_NOT_FOUND',
  /** Credentials refused during the handshake. */
  AUTH_FAILED: 'CONCORD_AUTH_FAILED',
  /** The access function refused the operation. */
  FORBIDDEN: 'CONCORD_FORBIDDEN',
  /** The remote side broke the protocol. */
  PROTOCOL_ERROR: 'CONCORD_PROTOCOL_ERROR',
  /** A dial could not reach the remote end (refused, unreachable, partitioned, handshake failed). */
  UNREACHABLE: 'CONCORD_UNREACHABLE',
  /** A listen found its address taken (another process listens on that port). */
  ADDRESS_IN_USE: 'CONCORD_ADDRESS_IN_USE',
  /** A document library failed inside an operation (Automerge's wasm trapped); the operation had no effect. */
  LIBRARY_FAILED: 'CONCORD_LIBRARY_FAILED',
  /** A conditional write whose version token is stale: the name changed since it was read (nothing was written). */
  CONFLICT: 'CONCORD_CONFLICT',
  /** A change whose signature does not verify, is not its claimed author's, or is missing where the author's key is known (nothing was applied). */
  BAD_SIGNATURE: 'CONCORD_BAD_SIGNATURE',
} as const

/** One of the stable error codes. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes]

/** Base class of every error Concord throws on purpose. */
export class ConcordError extends Error {
  /** Stable, documented code; branch on this. */
  readonly code: ErrorCode

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ConcordError'
    this.code = code
  }
}

/** Bytes that cannot be decoded. Thrown by every `decodeX`/`readX`. */
export class DecodeError extends ConcordError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCodes.DECODE_ERROR, message, options)
    this.name = 'DecodeError'
  }
}

/**
 * `word` with its indefinite article, for messages: "an orset", "a pncounter",
 * "an lww-register" (initialisms read letter by letter), "a Uint8Array".
 */
export function withArticle(word: string): string {
  const an = /^(lww|mv|ew|rga|fwd|hlc|mdns|rpo)\b/i.test(word) ? true : /^(u(ni|se|int|rl|tf)|one\b|eu)/i.test(word) ? false : /^[aeiou]/i.test(word)
  return `${an ? 'an' : 'a'} ${word}`
}

/** A name opened as another type than it was created with. */
export class TypeMismatchError extends ConcordError {
  constructor(name: string, expected: string, actual: string) {
    super(ErrorCodes.TYPE_MISMATCH, typeMismatchMessage(name, expected, actual))
    this.name = 'TypeMismatchError'
  }
}

/** `"tasks" is an orset, not a pncounter`. */
export function typeMismatchMessage(name: string, expected: string, actual: string): string {
  return `"${name}" is ${withArticle(actual)}, not ${withArticle(expected)}`
}

/** True when `error` is a {@link ConcordError}, optionally with the given code. */
export function isConcordError(error: unknown, code?: ErrorCode): error is ConcordError {
  return error instanceof ConcordError && (code === undefined || error.code === code)
}
