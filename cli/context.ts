/**
 * What every command gets: its streams, the exit code it sets, and the
 * wrapper that turns a thrown error into a one-line message (never a stack
 * trace) and a meaningful exit code.
 */
import { Option, type Command } from 'commander'
import type { Readable } from 'node:stream'
import { CliError, codeOf, ExitCodes, exitCodeOf, messageOf, type ExitCode } from './exit-codes.ts'
import { Output, type Io } from './output.ts'

/** The state of one CLI run. */
export interface CliContext {
  readonly io: Io
  /** Set by the command; the process exits with it. */
  exitCode: ExitCode
  /** Stops a long-running command (`serve`) like SIGINT would (tests use it). */
  readonly signal?: AbortSignal
  /** Standard input (`import`, and the answer to a confirmation); default process.stdin. */
  readonly stdin?: () => Readable
  /** Called by `serve` once it listens (tests use it to learn the URL). */
  readonly onListening?: (info: { url: string; port: number; libp2p?: { peerId: string; multiaddrs: string[] } }) => void
}

/** Options every folder command takes. */
export interface FolderOptions {
  readonly dir: string
  readonly json?: boolean
}

/** The `-d, --dir` option (or `$CONCORD_DIR`), checked by {@link action} (after unknown options, so `--dri` is reported as what it is). */
export function dirOption(what = 'the data folder (LevelDB) of a peer'): Option {
  return new Option('-d, --dir <dir>', `${what} (required)`).env('CONCORD_DIR')
}

/** Adds `-d, --dir` (or `$CONCORD_DIR`) and `--json` to a command. */
export function folderOptions(command: Command, what?: string): Command {
  return command.addOption(dirOption(what)).option('--json', 'print the result as JSON (one document on stdout)')
}

/** Writes an error as the `--json` document: `{ ok: false, error: { code, message, exit } }`. */
export function writeJsonError(io: Io, error: { code?: string; message: string; exit: ExitCode }): void {
  io.stdout.write(`${JSON.stringify({ ok: false, error })}\n`)
}

/**
 * Wraps a command's action: runs it with an {@link Output}, reports a thrown
 * error as `concord <command>: <message>` on stderr (or `{ ok: false, error }`
 * on stdout with `--json`) and sets the exit code from it.
 */
export function action<A extends unknown[]>(
  ctx: CliContext,
  name: string,
  fn: (out: Output, ...args: A) => Promise<ExitCode | void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const command = args.at(-1) as Command
    const json = Boolean((command.opts() as { json?: boolean }).json)
    const out = new Output(ctx.io, json)
    try {
      if (command.options.some((option) => option.long === '--dir') && command.getOptionValue('dir') === undefined) {
        throw new CliError(ExitCodes.USAGE, "required option '-d, --dir <dir>' not specified (or set $CONCORD_DIR)")
      }
      ctx.exitCode = (await fn(out, ...args)) ?? ExitCodes.OK
    } catch (error) {
      ctx.exitCode = exitCodeOf(error)
      const message = messageOf(error)
      if (json) writeJsonError(ctx.io, { code: codeOf(error), message: error instanceof Error ? error.message : message, exit: ctx.exitCode })
      ctx.io.stderr.write(`concord ${name}: ${message}\n`)
    }
  }
}

/** Parses a non-negative integer argument (a seq, a port); a usage error otherwise. */
export function parseInteger(value: string, what: string, min = 0): number {
  if (!/^\d+$/.test(value.trim())) throw new CliError(ExitCodes.USAGE, `${what} must be a whole number, got "${value}"`)
  const number = Number(value)
  if (!Number.isSafeInteger(number) || number < min) throw new CliError(ExitCodes.USAGE, `${what} must be at least ${min}, got "${value}"`)
  return number
}
