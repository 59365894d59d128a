/**
 * The `concord` command line: builds the commander program and runs it,
 * turning every outcome into an exit code (see exit-codes.ts).
 */
import { Command, CommanderError } from 'commander'
import type { Readable } from 'node:stream'
import { registerHistoryCommands } from './commands/history.ts'
import { registerMaintenanceCommands } from './commands/maintenance.ts'
import { registerReadCommands } from './commands/read.ts'
import { registerServe } from './commands/serve.ts'
import { registerMcp } from './commands/mcp.ts'
import { registerTransferCommands } from './commands/transfer.ts'
import type { CliContext } from './context.ts'
import { ErrorCodes } from '../crdt/errors.ts'
import { writeJsonError } from './context.ts'
import { codeOf, EXIT_CODES_HELP, ExitCodes, exitCodeOf, messageOf } from './exit-codes.ts'
import { packageVersion } from './package-version.ts'
import { processIo, type Io } from './output.ts'

/** Options of {@link runCli}. */
export interface RunOptions {
  /** Stops `serve` (as SIGINT would). */
  readonly signal?: AbortSignal
  /** Called once `serve` listens. */
  readonly onListening?: (info: { url: string; port: number }) => void
  /** Standard input for `import` (default process.stdin). */
  readonly stdin?: () => Readable
}

/** Builds the program for one run. */
export function createProgram(ctx: CliContext, stdin?: () => Readable): Command {
  const program = new Command('concord')
    .description('Concord: inspect, maintain, export/import and serve Concord data folders (LevelDB).')
    .version(packageVersion(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `\nThe data folder can also be given as $CONCORD_DIR.\n\n${EXIT_CODES_HELP}\n`)
  program.configureOutput({
    writeOut: (text) => ctx.io.stdout.write(text),
    writeErr: (text) => ctx.io.stderr.write(text),
  })
  program.exitOverride()
  registerServe(program, ctx)
  registerMcp(program, ctx)
  registerReadCommands(program, ctx)
  registerHistoryCommands(program, ctx)
  registerMaintenanceCommands(program, ctx)
  registerTransferCommands(program, ctx, stdin)
  for (const command of program.commands) {
    command.exitOverride()
    command.configureOutput({ writeOut: (text) => ctx.io.stdout.write(text), writeErr: (text) => ctx.io.stderr.write(text) })
    command.showHelpAfterError('(run with --help for usage)')
    command.addHelpText('after', `\n${EXIT_CODES_HELP}\n`)
  }
  return program
}

/** True when `--json` is among the options (before a `--` that ends them). */
function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--')
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json')
}

/** commander's message on one line, without its `error: ` prefix: "unknown option '--dri' (Did you mean --dir?)". */
function usageMessage(message: string): string {
  return message
    .replace(/^error: /, '')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ')
}

/**
 * Runs `concord` with `argv` (without the node and script paths); resolves
 * with the exit code. Never throws.
 */
export async function runCli(argv: readonly string[], io: Io = processIo(), options: RunOptions = {}): Promise<number> {
  const ctx: CliContext = { io, exitCode: ExitCodes.OK, signal: options.signal, onListening: options.onListening, stdin: options.stdin }
  const program = createProgram(ctx, options.stdin)
  if (argv.length === 0) {
    program.outputHelp()
    return ExitCodes.USAGE
  }
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return ctx.exitCode
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return ExitCodes.OK
      // commander printed its message on stderr; with --json, scripts get it as the JSON document too.
      if (wantsJson(argv)) writeJsonError(io, { code: ErrorCodes.INVALID_ARGUMENT, message: usageMessage(error.message), exit: ExitCodes.USAGE })
      return ExitCodes.USAGE
    }
    io.stderr.write(`concord: ${messageOf(error)}\n`)
    if (wantsJson(argv)) writeJsonError(io, { code: codeOf(error), message: error instanceof Error ? error.message : String(error), exit: exitCodeOf(error) })
    return exitCodeOf(error)
  }
}
