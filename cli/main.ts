/**
 * Entry point of the `concord` command (run by cli/bin.mjs through tsx,
 * with shim/node20.ts loaded first).
 */
import { runCli } from './program.ts'

const code = await runCli(process.argv.slice(2))
process.exitCode = code
// Everything was closed by the command; do not wait on stray handles.
setImmediate(() => process.exit(code))
