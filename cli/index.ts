/** cli/: the `concord` command line (run it with `npx concord --help`). */
export { runCli, createProgram, type RunOptions } from './program.ts'
export { ExitCodes, CliError, exitCodeOf, EXIT_CODES_HELP, type ExitCode } from './exit-codes.ts'
export {
  encodeBinaryDump,
  decodeBinaryDump,
  encodeJsonlDump,
  decodeJsonlDump,
  decodeDump,
  DUMP_VERSION,
  type Dump,
  type DumpEntry,
  type DumpFormat,
} from './dump-format.ts'
export { parseAcl, matchPattern, type Acl, type AclRule } from './acl.ts'
export { importFromYLeveldb, type YLeveldbDocReport, type YLeveldbImportOptions } from './y-leveldb-import.ts'
export { openFolder, withFolder, storedAgentId, type OpenedFolder } from './open-store.ts'
export type { Io } from './output.ts'
