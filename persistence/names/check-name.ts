/** The rule every name a store is given must follow. */
import { isWellFormed } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/**
 * Throws `CONCORD_INVALID_ARGUMENT` unless `name` is a non-empty string of
 * at most 1024 characters that is well-formed Unicode: a lone surrogate
 * would not survive UTF-8 (`'x\uD800'` and `'x\uDBFF'` would share a key).
 */
export function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 1024 || !isWellFormed(name)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'a name must be a non-empty, well-formed (no lone surrogate) string of at most 1024 characters')
  }
}
