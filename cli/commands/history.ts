/**
 * History queries from the command line: `blame NAME` (who wrote what a
 * name holds now) and `diff NAME A B` (what changed between two records,
 * and who changed it), and `restore-at` (the whole store as it was at a
 * time, to a new folder). They use the store's own queries (Store.blame,
 * Store.diff, Store.restoreTo), the ones MCP and the inspector show;
 * `--json` prints them as they are.
 */
import { existsSync, readdirSync } from 'node:fs'
import type { Command } from 'commander'
import type { RestorePoint } from '../../persistence/history/restore.ts'
import type { Blame } from '../../persistence/history/blame.ts'
import type { Changes } from '../../persistence/history/diff.ts'
import { action, folderOptions, parseInteger, type CliContext, type FolderOptions } from '../context.ts'
import { CliError, ExitCodes } from '../exit-codes.ts'
import { withFolder } from '../open-store.ts'
import { table } from '../output.ts'
import { clipText, nameInfo, parseTime } from './read.ts'

function who(entry: { agent: string | null; seq?: number; message?: string; before?: number }): string {
  if (entry.agent === null) return `(before ${entry.before})`
  return `${entry.agent} @${entry.seq}${entry.message ? ` "${clipText(entry.message, 40)}"` : ''}`
}

function renderBlame(blame: Blame): string {
  switch (blame.kind) {
    case 'text':
      return table(
        ['AT', 'LENGTH', 'WHO', 'TEXT'],
        blame.spans.map((s) => [String(s.index), String(s.length), who(s), JSON.stringify(clipText(s.text, 40))]),
      )
    case 'paths':
      return table(
        ['PATH', 'WHO'],
        blame.paths.map((p) => [p.path === '' ? '/' : p.path, who(p)]),
      )
    case 'counter':
      return [
        `value ${blame.value} (${blame.before} before the records replayed)`,
        table(
          ['AGENT', 'AMOUNT', 'RECORDS'],
          blame.contributions.map((c) => [c.agent, String(c.amount), String(c.records)]),
        ),
      ].join('\n')
    case 'set':
      return table(
        ['ELEMENT', 'WHO'],
        blame.elements.map((e) => [clipText(JSON.stringify(e.element), 60), who(e)]),
      )
  }
}

function renderChanges(changes: Changes): string[] {
  switch (changes.kind) {
    case 'counter':
      return [`${changes.from} -> ${changes.to} (${changes.delta >= 0 ? '+' : ''}${changes.delta})`]
    case 'set':
      return [...changes.added.map((e) => `+ ${JSON.stringify(e)}`), ...changes.removed.map((e) => `- ${JSON.stringify(e)}`)]
    case 'value':
      return [`${JSON.stringify(changes.from)} -> ${JSON.stringify(changes.to)}`]
    case 'json':
      return changes.patch.map((op) => JSON.stringify(op))
    case 'document':
      return changes.fields.flatMap((f) =>
        f.kind === 'text'
          ? f.spans.map((s) => `${f.field} ${s.op === 'insert' ? '+' : '-'} @${s.at} ${JSON.stringify(clipText(s.text, 60))}`)
          : f.patch.map((op) => `${f.field} ${JSON.stringify(op)}`),
      )
  }
}

/** A restore point: `WALL.LOGICAL` (an HLC, as `history --json` prints it), ISO 8601, or ms since the epoch. */
export function parseRestorePoint(value: string): RestorePoint {
  const hlc = /^(\d+)\.(\d+)$/.exec(value.trim())
  if (hlc) return { wall: parseInteger(hlc[1], '--at'), logical: parseInteger(hlc[2], '--at') }
  return parseTime(value, '--at')
}

/** Registers blame, diff and restore-at. */
export function registerHistoryCommands(program: Command, ctx: CliContext): void {
  folderOptions(
    program
      .command('restore-at')
      .requiredOption('--at <time>', 'the time: ISO 8601, ms since the epoch, or an HLC as WALL.LOGICAL')
      .requiredOption('--out <dir>', 'the new folder to write (must not hold a store)')
      .description(
        'write the whole store as it was at a time to a new folder (every name cut at its last record then; unclaimed: open it with a new agent id)',
      ),
  ).action(
    action(ctx, 'restore-at', async (out, options: FolderOptions & { at: string; out: string }) => {
      const at = parseRestorePoint(options.at)
      if (existsSync(options.out) && readdirSync(options.out).length > 0) {
        throw new CliError(ExitCodes.USAGE, `--out ${options.out} is not empty: restore into a new folder`)
      }
      await withFolder(options.dir, async ({ store }) => {
        const report = await store.restoreTo(options.out, { at })
        out.result(report, () =>
          [
            `${options.out}: ${report.names.length} name(s) as of ${typeof at === 'number' ? new Date(at).toISOString() : `${at.wall}.${at.logical}`}`,
            ...(report.names.length > 0
              ? [
                  table(
                    ['NAME', 'TYPE', 'SEQ'],
                    report.names.map((n) => [n.name, n.type, String(n.seq)]),
                  ),
                ]
              : []),
            ...report.unavailable.map((u) => `${u.name}: not restored: ${u.reason}`),
          ].join('\n'),
        )
      })
    }),
  )

  folderOptions(
    program
      .command('blame')
      .argument('<name>', 'the name')
      .option('--field <field>', 'Yjs documents: the field (default: the only text)')
      .option('--limit <n>', 'replay the newest N records (older content shows as "before")', '500')
      .description('who wrote what a name holds now: text spans, fields, set elements by author and record; counters by author'),
  ).action(
    action(ctx, 'blame', async (out, name: string, options: FolderOptions & { field?: string; limit: string }) => {
      const limit = parseInteger(options.limit, '--limit', 1)
      if (limit > 2000) throw new CliError(ExitCodes.USAGE, `--limit must be at most 2000, got "${options.limit}"`)
      await withFolder(options.dir, async ({ store }) => {
        await nameInfo(store, name)
        const report = await store.blame(name, { field: options.field, limit })
        out.result(report, () => `"${name}" (${report.type}), records ${report.from}..${report.to}\n${renderBlame(report.blame)}`)
      })
    }),
  )

  folderOptions(
    program
      .command('diff')
      .argument('<name>', 'the name')
      .argument('<from>', 'the older record (0: the empty state)')
      .argument('[to]', 'the newer record (default: the last)')
      .description('what changed in a name between two records, and who changed it (text spans, JSON Patch, set elements, counter delta per author)'),
  ).action(
    action(ctx, 'diff', async (out, name: string, fromText: string, toText: string | undefined, options: FolderOptions) => {
      const from = parseInteger(fromText, 'FROM')
      const to = toText === undefined ? undefined : parseInteger(toText, 'TO')
      await withFolder(options.dir, async ({ store }) => {
        const info = await nameInfo(store, name)
        if ((to ?? from) > info.lastSeq || from > (to ?? info.lastSeq)) {
          throw new CliError(ExitCodes.NOT_FOUND, `"${name}" has records 1..${info.lastSeq}: no diff ${from}..${to ?? info.lastSeq}`)
        }
        const report = await store.diff(name, from, to)
        out.result(report, () =>
          [
            `"${name}" (${report.type}) ${report.from} -> ${report.to}`,
            ...renderChanges(report.changes),
            ...(report.byAgent
              ? [
                  table(
                    ['AGENT', 'DELTA', 'RECORDS'],
                    report.byAgent.map((a) => [a.agent, String(a.delta), String(a.records)]),
                  ),
                ]
              : []),
            ...(report.records.length > 0
              ? [
                  table(
                    ['SEQ', 'AGENT', 'MESSAGE'],
                    report.records.map((r) => [String(r.seq), r.agent, clipText(r.message ?? '', 60)]),
                  ),
                ]
              : []),
          ].join('\n'),
        )
      })
    }),
  )
}
