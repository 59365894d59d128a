/**
 * Exit codes of the `concord` command (documented in `concord --help` and
 * the README). Scripts branch on them.
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'

/** Every exit code `concord` uses. */
export const ExitCodes = {
  /** Done. */
  OK: 0,
  /** Something failed (storage, network, bad data); the message says what. */
  FAILURE: 1,
  /** Bad usage: unknown command or option, missing or invalid argument. */
  USAGE: 2,
  /** The folder, file or name does not exist. */
  NOT_FOUND: 3,
  /** The data folder is held by another process (a running peer). */
  LOCKED: 4,
  /** `verify` (or an import check) found damaged or differing data. */
  VERIFY_FAILED: 5,
} as const

/** One of {@link ExitCodes}. */
export type ExitCode = (typeof ExitCodes)[keyof typeof ExitCodes]

/** The help text listing the exit codes. */
export const EXIT_CODES_HELP = `Exit codes:
  0  ok
  1  failure (storage, network, bad data: the message says what)
  2  usage (unknown command or option, missing or invalid argument)
  3  not found (no such folder, file or name)
  4  locked (the data folder is held by another process)
  5  verification failed (verify found damage; an import did not match)`

/** A failure the CLI reports with a message and an exit code (no stack trace). */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'CliError'
  }
}

/** The exit code for an error thrown by a command. */
export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof CliError) return error.exitCode
  if (isConcordError(error)) {
    switch (error.code) {
      case ErrorCodes.NOT_FOUND:
        return ExitCodes.NOT_FOUND
      case ErrorCodes.LOCKED:
        return ExitCodes.LOCKED
      case ErrorCodes.INVALID_ARGUMENT:
        return ExitCodes.USAGE
      case ErrorCodes.CORRUPT_RECORD:
        return ExitCodes.VERIFY_FAILED
      default:
        return ExitCodes.FAILURE
    }
  }
  return ExitCodes.FAILURE
}

/** The stable code of an error for `--json` output: its ConcordError code, or the one its exit code stands for. */
export function codeOf(error: unknown): string | undefined {
  if (isConcordError(error)) return error.code
  if (error instanceof CliError) {
    switch (error.exitCode) {
      case ExitCodes.USAGE:
        return ErrorCodes.INVALID_ARGUMENT
      case ExitCodes.NOT_FOUND:
        return ErrorCodes.NOT_FOUND
      case ExitCodes.LOCKED:
        return ErrorCodes.LOCKED
      default:
        return undefined
    }
  }
  return undefined
}

/** A one-line message for an error (its code first when it has one). */
export function messageOf(error: unknown): string {
  if (isConcordError(error)) return `${error.code}: ${error.message}`
  if (error instanceof Error) return error.message
  return String(error)
}
