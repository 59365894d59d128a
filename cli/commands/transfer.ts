/**
 * `export` and `import`: whole folders (or chosen names) as JSON Lines or
 * binary (cli/dump-format.ts), and `import --from-y-leveldb PATH`.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { type Command, Option } from 'commander'
import type { Readable } from 'node:stream'
import { action, folderOptions, type CliContext, type FolderOptions } from '../context.ts'
import { decodeDump, encodeBinaryDump, encodeJsonlDump, type DumpEntry, type DumpFormat } from '../dump-format.ts'
import { CliError, ExitCodes } from '../exit-codes.ts'
import { withFolder } from '../open-store.ts'
import { formatBytes, table } from '../output.ts'
import { importFromYLeveldb, type YLeveldbDocReport } from '../y-leveldb-import.ts'

/** Names imported per atomic batch. */
const IMPORT_BATCH = 64

async function readAll(stream: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
  const all = Buffer.concat(chunks)
  return new Uint8Array(all.buffer, all.byteOffset, all.byteLength)
}

/** Registers export and import. */
export function registerTransferCommands(program: Command, ctx: CliContext, stdin: () => Readable = () => process.stdin): void {
  folderOptions(
    program
      .command('export')
      .argument('[names...]', 'names to export (default: every live name)')
      .addOption(new Option('-f, --format <format>', 'jsonl (human-readable) or binary').choices(['jsonl', 'binary']).default('jsonl'))
      .option('-o, --out <file>', 'write to this file (default: stdout)')
      .description('export names (type and whole state) as JSON Lines or binary; import reads both back exactly'),
  ).action(
    action(ctx, 'export', async (out, names: string[], options: FolderOptions & { format: DumpFormat; out?: string }) => {
      if (options.format === 'binary' && options.out === undefined && (ctx.io.stdout as { isTTY?: boolean }).isTTY) {
        throw new CliError(ExitCodes.USAGE, 'refusing to write binary to a terminal: use --out FILE or a pipe')
      }
      await withFolder(options.dir, async ({ store, agentId: id }) => {
        const all = await store.names()
        const wanted = names.length > 0 ? names : all.filter((n) => !n.archived).map((n) => n.name)
        const entries: DumpEntry[] = []
        const progress = out.progress(wanted.length, 'export')
        try {
          for (const name of wanted) {
            const info = all.find((n) => n.name === name)
            if (!info) throw new CliError(ExitCodes.NOT_FOUND, `no name "${name}"`)
            if (info.archived) throw new CliError(ExitCodes.FAILURE, `"${name}" is archived: restore it first`)
            const replica = await store.open(name, info.type)
            const state = replica.deltaSince(store.emptyVersion(info.type)) ?? new Uint8Array(0)
            entries.push({ name, type: info.type, state, value: options.format === 'jsonl' ? replica.value() : undefined })
            progress.tick(name)
          }
        } finally {
          progress.stop()
        }
        const dump = { source: id ?? '', exported: Date.now(), entries }
        const bytes = options.format === 'binary' ? encodeBinaryDump(dump) : new TextEncoder().encode(encodeJsonlDump(dump))
        if (options.out !== undefined) {
          await writeFile(options.out, bytes)
          out.result(
            { file: options.out, format: options.format, names: entries.length, bytes: bytes.length },
            () => `exported ${entries.length} name(s) to ${options.out} (${options.format}, ${formatBytes(bytes.length)})`,
          )
        } else {
          await new Promise<void>((resolve, reject) => ctx.io.stdout.write(bytes, (error) => (error ? reject(error) : resolve())))
        }
      })
    }),
  )

  folderOptions(
    program
      .command('import')
      .argument('[file]', 'a file written by `concord export` (JSON Lines or binary, told apart by its first byte); "-" or omitted: stdin')
      .option('--from-y-leveldb <path>', 'instead: import every document of a y-leveldb database as Concord Yjs names')
      .option('--prefix <prefix>', 'with --from-y-leveldb: prefix of the Concord names', '')
      .option('--id <id>', 'claim a new folder for this agent id (default: none; the first peer that opens the folder owns it)')
      .description('import an export (joined into existing names) or a y-leveldb database; every name is checked after (exit 5 on a mismatch)'),
    'the data folder to import into (created if missing)',
  ).action(
    action(ctx, 'import', async (out, file: string | undefined, options: FolderOptions & { fromYLeveldb?: string; prefix: string; id?: string }) => {
      if (options.fromYLeveldb !== undefined) {
        if (file !== undefined) throw new CliError(ExitCodes.USAGE, 'give either FILE or --from-y-leveldb, not both')
        const path = options.fromYLeveldb
        return withFolder(
          options.dir,
          async ({ store }) => {
            let progress = out.progress(0, 'import')
            const reports: YLeveldbDocReport[] = await importFromYLeveldb(store, path, {
              prefix: options.prefix,
              onCount: (total) => {
                progress = out.progress(total, 'import')
              },
              onDoc: (report) => progress.tick(report.doc),
            }).finally(() => progress.stop())
            const ok = reports.every((r) => r.verified)
            out.result({ ok, source: path, documents: reports }, () =>
              [
                reports.length === 0
                  ? `${path}: no documents`
                  : table(
                      ['DOCUMENT', 'NAME', 'SIZE', 'CHECK'],
                      reports.map((r) => [r.doc, r.name, formatBytes(r.bytes), r.verified ? (r.created ? 'equal' : 'merged, contains') : 'MISMATCH']),
                    ),
                ok ? `imported ${reports.length} y-leveldb document(s), each verified against y-leveldb's getYDoc` : 'import check FAILED',
              ].join('\n'),
            )
            return ok ? ExitCodes.OK : ExitCodes.VERIFY_FAILED
          },
          { create: true, agentId: options.id },
        )
      }

      let bytes: Uint8Array
      if (file === undefined || file === '-') {
        bytes = await readAll(stdin())
      } else {
        if (!existsSync(file)) throw new CliError(ExitCodes.NOT_FOUND, `no file ${file}`)
        bytes = new Uint8Array(await readFile(file))
      }
      const { dump, format } = decodeDump(bytes)
      return withFolder(
        options.dir,
        async ({ store }) => {
          const created = new Set<string>()
          for (const entry of dump.entries) if ((await store.typeOf(entry.name)) === undefined) created.add(entry.name)
          const progress = out.progress(dump.entries.length, 'import')
          try {
            for (let i = 0; i < dump.entries.length; i += IMPORT_BATCH) {
              const batch = dump.entries.slice(i, i + IMPORT_BATCH)
              const deltas = batch.filter((e) => e.state.length > 0).map((e) => ({ name: e.name, delta: e.state, type: e.type }))
              for (const entry of batch) if (entry.state.length === 0) await store.open(entry.name, entry.type)
              if (deltas.length > 0) await store.commit(deltas)
              for (const entry of batch) progress.tick(entry.name)
            }
          } finally {
            progress.stop()
          }
          await store.flush()
          // Check: a name the import created holds exactly the exported value.
          const mismatches: string[] = []
          for (const entry of dump.entries) {
            if (!created.has(entry.name) || entry.value === undefined) continue
            const value = (await store.open(entry.name, entry.type)).value()
            if (JSON.stringify(value) !== JSON.stringify(entry.value)) mismatches.push(entry.name)
          }
          const ok = mismatches.length === 0
          out.result({ ok, format, source: dump.source, names: dump.entries.length, created: created.size, mismatches }, () =>
            ok
              ? `imported ${dump.entries.length} name(s) (${format}, from ${dump.source === '' ? 'an unclaimed folder' : `"${dump.source}"`}; ${created.size} new, ${dump.entries.length - created.size} joined into existing)`
              : `import check FAILED: the imported value differs from the exported one for ${mismatches.join(', ')}`,
          )
          return ok ? ExitCodes.OK : ExitCodes.VERIFY_FAILED
        },
        { create: true, agentId: options.id },
      )
    }),
  )
}
