#!/usr/bin/env node
/**
 * Entry point of the `concord` command: the package's bin runs the compiled
 * dist/cli/main.js with plain Node; in this repository `npm run concord --`
 * runs this file through tsx. Signals reach the command directly (serve
 * shuts down cleanly).
 */
import { runCli } from './program.ts'

/** Resolves once everything written to `stream` so far has been handed to the OS (or the stream failed). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    stream.once('error', () => resolve())
    if (stream.destroyed || stream.writableEnded) resolve()
    else stream.write('', () => resolve())
  })
}

const code = await runCli(process.argv.slice(2))
process.exitCode = code
// Everything was closed by the command; do not wait on stray handles. But a
// pipe takes only 64 KiB at once: let stdout and stderr drain first, or a
// large --json document would be cut.
await Promise.all([drained(process.stdout), drained(process.stderr)])
process.exit(code)
