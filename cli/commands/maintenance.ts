/**
 * Maintenance commands: `verify [NAME]`, `repair [NAME]` (a log damaged in
 * the middle), `compact` (checkpoint every name),
 * `gc`, `archive NAME`, `restore NAME` (rehydrate an archived name), and
 * `expire` (the TTL sweep, now).
 */
import { isAbsolute, join } from 'node:path'
import { createInterface } from 'node:readline'
import type { Command } from 'commander'
import type { RepairReport } from '../../persistence/index.ts'
import { lossProblem } from '../../persistence/lifecycle/seal.ts'
import type { VerifyReport } from '../../persistence/store.ts'
import { action, folderOptions, parseInteger, type CliContext, type FolderOptions } from '../context.ts'
import { CliError, ExitCodes } from '../exit-codes.ts'
import { collectValues, parseAuthorKeys } from '../author-keys.ts'
import { withFolder } from '../open-store.ts'
import { table } from '../output.ts'
import { nameInfo, repairHint } from './read.ts'

/** Registers verify, repair, compact, gc, archive, restore and expire. */
export function registerMaintenanceCommands(program: Command, ctx: CliContext): void {
  folderOptions(
    program
      .command('verify')
      .argument('[name]', 'one name (default: every live name)')
      .option(
        '--author-key <id=peerId>',
        'bind an author id to an Ed25519 PeerId to check its signatures with (repeatable; the folder owner is bound to <dir>/libp2p-key when there is one)',
        collectValues,
        [] as string[],
      )
      .description(
        'check checksums, seqs, the hash chain, signatures, checkpoints, and that replaying the log gives the live state (exit 5 if anything is wrong)',
      ),
  ).action(
    action(ctx, 'verify', async (out, name: string | undefined, options: FolderOptions & { authorKey: string[] }) => {
      const authorKeys = parseAuthorKeys(options.authorKey)
      return withFolder(
        options.dir,
        async ({ store }) => {
          const all = await store.names()
          const lostWhole = name !== undefined && !all.some((n) => n.name === name) && (await store.recordedLosses()).some((l) => l.name === name)
          const targets = name === undefined ? all.filter((n) => !n.archived) : lostWhole ? [] : [await nameInfo(store, name)]
          const skipped = name === undefined ? all.filter((n) => n.archived).map((n) => n.name) : []
          const reports: VerifyReport[] = []
          const progress = out.progress(targets.length, 'verify')
          try {
            for (const target of targets) {
              if (target.archived) {
                reports.push({
                  name: target.name,
                  ok: false,
                  firstSeq: 0,
                  lastSeq: target.lastSeq,
                  records: target.records,
                  checkpoints: target.checkpoints,
                  problems: ['archived: restore it first'],
                })
              } else {
                reports.push(await store.verify(target.name))
              }
              progress.tick(target.name)
            }
          } finally {
            progress.stop()
          }
          // Names lost whole since the last clean close (persistence/lifecycle/seal.ts) are listed nowhere else.
          for (const loss of await store.recordedLosses()) {
            if ((name === undefined || name === loss.name) && !reports.some((r) => r.name === loss.name)) {
              reports.push({ name: loss.name, ok: false, firstSeq: 0, lastSeq: 0, records: 0, checkpoints: 0, problems: [lossProblem(loss)] })
            }
          }
          const ok = reports.every((report) => report.ok)
          // Archived names are restored, not repaired; every other failure is what repair fixes.
          const repairable = reports.filter((r) => !r.ok && !r.problems.every((p) => p.startsWith('archived')))
          const hint =
            repairable.length > 0
              ? repairHint(
                  options.dir,
                  repairable.map((r) => r.name),
                )
              : undefined
          out.result({ ok, reports, skipped, ...(hint ? { hint } : {}) }, () =>
            [
              reports.length === 0
                ? 'no names to verify'
                : table(
                    ['NAME', 'RESULT', 'RECORDS', 'SEQS', 'CHECKPOINTS'],
                    reports.map((r) => [r.name, r.ok ? 'ok' : 'FAILED', String(r.records), `${r.firstSeq}..${r.lastSeq}`, String(r.checkpoints)]),
                  ),
              ...reports.filter((r) => !r.ok).flatMap((r) => r.problems.map((problem) => `${r.name}: ${problem}`)),
              ...(skipped.length > 0 ? [`skipped (archived): ${skipped.join(', ')}`] : []),
              ok ? `verified ${reports.length} name(s): ok` : `verification FAILED for ${reports.filter((r) => !r.ok).length} name(s)`,
              ...(hint ? [hint] : []),
            ].join('\n'),
          )
          return ok ? ExitCodes.OK : ExitCodes.VERIFY_FAILED
        },
        { authorKeys },
      )
    }),
  )

  folderOptions(
    program
      .command('repair')
      .argument('[name]', 'one name (default: every live name)')
      .description(
        'repair names whose log is damaged in the middle: keep the intact records before the damage, drop the damaged ones, write the intact ones after it again (renumbered, chained anew); peers resend what was lost',
      ),
  ).action(
    action(ctx, 'repair', async (out, name: string | undefined, options: FolderOptions) => {
      return withFolder(options.dir, async ({ store }) => {
        const lost = (await store.recordedLosses()).map((loss) => loss.name)
        const targets: Array<{ name: string }> =
          name === undefined
            ? [...new Set([...(await store.names()).filter((n) => !n.archived).map((n) => n.name), ...lost])].map((n) => ({ name: n }))
            : [lost.includes(name) ? { name } : await nameInfo(store, name)]
        const reports: RepairReport[] = []
        const progress = out.progress(targets.length, 'repair')
        try {
          for (const target of targets) {
            reports.push(await store.repair(target.name))
            progress.tick(target.name)
          }
        } finally {
          progress.stop()
        }
        const repaired = reports.filter((r) => r.repaired)
        out.result({ reports }, () =>
          [
            ...repaired.map(
              (r) => `${r.name}: cut at record ${r.cutAt} (${r.reason}); ${r.lostRecords} record(s) lost, ${r.salvagedRecords} kept after the damage`,
            ),
            repaired.length === 0 ? `checked ${reports.length} name(s): nothing to repair` : `repaired ${repaired.length} of ${reports.length} name(s)`,
          ].join('\n'),
        )
        return ExitCodes.OK
      })
    }),
  )

  folderOptions(
    program.command('compact').description('write a checkpoint of every live name now (history is kept unless a retention policy says otherwise)'),
  ).action(
    action(ctx, 'compact', async (out, options: FolderOptions) => {
      await withFolder(options.dir, async ({ store }) => {
        const names = (await store.names()).filter((n) => !n.archived)
        const done: Array<{ name: string; seq: number }> = []
        const progress = out.progress(names.length, 'compact')
        try {
          for (const info of names) {
            done.push({ name: info.name, seq: await store.checkpoint(info.name) })
            progress.tick(info.name)
          }
        } finally {
          progress.stop()
        }
        await store.flush()
        out.result({ checkpoints: done }, () => `checkpointed ${done.length} name(s)`)
      })
    }),
  )

  folderOptions(program.command('gc').description('delete records and checkpoints outside retention and keys of deleted names')).action(
    action(ctx, 'gc', async (out, options: FolderOptions) => {
      await withFolder(options.dir, async ({ store }) => {
        const report = await store.gc()
        out.result(
          report,
          () => `gc: ${report.deletedRecords} record(s), ${report.deletedCheckpoints} checkpoint(s), ${report.orphanNames} orphan name(s) deleted`,
        )
      })
    }),
  )

  folderOptions(
    program
      .command('archive')
      .argument('<name>', 'the name to archive')
      .description('move a name to a compressed archive file beside the folder (restore brings it back)'),
  ).action(
    action(ctx, 'archive', async (out, name: string, options: FolderOptions) => {
      await withFolder(options.dir, async ({ store }) => {
        const info = await nameInfo(store, name)
        if (info.archived) {
          out.result({ name, archived: true, already: true }, () => `"${name}" is already archived`)
          return
        }
        const file = await store.archive(name)
        const path = isAbsolute(file) ? file : join(`${options.dir}.archive`, file)
        out.result({ name, archived: true, file: path }, () => `archived "${name}" to ${path}`)
      })
    }),
  )

  folderOptions(
    program.command('restore').argument('<name>', 'the archived name to bring back').description('rehydrate an archived name into the folder'),
  ).action(
    action(ctx, 'restore', async (out, name: string, options: FolderOptions) => {
      await withFolder(options.dir, async ({ store }) => {
        const info = await nameInfo(store, name)
        if (!info.archived) {
          out.result({ name, restored: false, archived: false }, () => `"${name}" is not archived: nothing to do`)
          return
        }
        await store.open(name, info.type)
        await store.flush()
        const after = await nameInfo(store, name)
        out.result({ name, restored: true, info: after }, () => `restored "${name}" (${after.type}, ${after.records} record(s), last seq ${after.lastSeq})`)
      })
    }),
  )

  folderOptions(
    program
      .command('expire')
      .option('--ttl <ms>', "TTL of names that have none of their own (as a peer's ttlMs option)")
      .option('-n, --dry-run', 'list the names that would expire; delete nothing')
      .option('-y, --yes', 'delete without asking (required when stdin is not a terminal)')
      .description('run the TTL sweep now: delete every name untouched for longer than its TTL (asks first on a terminal; --dry-run lists them)'),
  ).action(
    action(ctx, 'expire', async (out, options: FolderOptions & { ttl?: string; dryRun?: boolean; yes?: boolean }) => {
      const ttlMs = options.ttl === undefined ? undefined : parseInteger(options.ttl, '--ttl', 1)
      return withFolder(
        options.dir,
        async ({ store }) => {
          const due = await store.expire({ dryRun: true })
          const list = (names: readonly string[]) => (names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`)
          if (due.length === 0) {
            out.result({ expired: [], dryRun: Boolean(options.dryRun) }, () => 'expire: no name past its TTL')
            return ExitCodes.OK
          }
          if (options.dryRun) {
            out.result({ expired: due, dryRun: true }, () => `expire --dry-run: ${due.length} name(s) would be deleted: ${list(due)}`)
            return ExitCodes.OK
          }
          if (!options.yes) {
            if (!ctx.io.interactive || options.json) {
              throw new CliError(
                ExitCodes.USAGE,
                `${due.length} name(s) would be deleted with all their data (${list(due)}): rerun with --yes to delete them, or --dry-run to only list them`,
              )
            }
            const answer = await ask(ctx, `delete ${due.length} name(s) and all their data (${list(due)})? [y/N] `)
            if (!/^y(es)?$/i.test(answer.trim())) {
              out.note('expire: nothing deleted')
              return ExitCodes.FAILURE
            }
          }
          const expired = await store.expire({ only: due })
          out.result({ expired, dryRun: false }, () =>
            expired.length === 0 ? 'expire: no name past its TTL' : `expired ${expired.length} name(s): ${list(expired)}`,
          )
          return ExitCodes.OK
        },
        { ttlMs },
      )
    }),
  )
}

/** Asks a question on stderr and reads one line of the answer from stdin. */
async function ask(ctx: CliContext, question: string): Promise<string> {
  const input = (ctx.stdin ?? (() => process.stdin))()
  const reader = createInterface({ input, output: ctx.io.stderr, terminal: false })
  try {
    ctx.io.stderr.write(question)
    const answer = await new Promise<string>((resolve) => {
      reader.once('line', resolve)
      reader.once('close', () => resolve(''))
    })
    return answer
  } finally {
    reader.close()
  }
}
