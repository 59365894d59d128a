/**
 * Commands that read a folder: `inspect [NAME]`, `history NAME`,
 * `at NAME SEQ`; and `revert NAME SEQ`, the one that writes a new change
 * going back to a past value.
 */
import type { Command } from 'commander'
import { type HistoryPage, MAX_HISTORY_PAGE } from '../../persistence/history/queries.ts'
import type { NameInfo, Store } from '../../persistence/store.ts'
import { action, folderOptions, parseInteger, type CliContext, type FolderOptions } from '../context.ts'
import { CliError, ExitCodes, messageOf } from '../exit-codes.ts'
import { collectValues, parseAuthorKeys } from '../author-keys.ts'
import { withFolder } from '../open-store.ts'
import { formatBytes, formatTime, table, type Output } from '../output.ts'

/** Records of an unfiltered page, any `limit` (as before filters existed), with the cursor of the next one when it is full. */
async function wholePage(store: Store, name: string, options: { from?: number; limit: number; reverse?: boolean }): Promise<HistoryPage> {
  const entries = await store.history(name, options)
  const last = entries.at(-1)
  if (!last || entries.length < options.limit) return { entries }
  const next = options.reverse ? last.seq - 1 : last.seq + 1
  return next >= 1 ? { entries, cursor: `${options.reverse ? 'r' : 'f'}${next}` } : { entries }
}

/** A time option: ISO 8601, or whole ms since the epoch. */
export function parseTime(value: string, what: string): number {
  if (/^\d+$/.test(value.trim())) return parseInteger(value, what)
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw new CliError(ExitCodes.USAGE, `${what} must be a time (ISO 8601, or ms since the epoch), got "${value}"`)
  return ms
}

/** `text` on one line, cut to `max` characters. */
export function clipText(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ')
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}

/** The info of `name`, or "not found" (exit 3). */
export async function nameInfo(store: Store, name: string): Promise<NameInfo> {
  // A name sorts before every other name it is a prefix of: the first of this page is it, if it exists.
  const info = (await store.pageNames({ prefix: name, limit: 1 })).names.find((item) => item.name === name)
  if (!info) throw new CliError(ExitCodes.NOT_FOUND, `no name "${name}"`)
  return info
}

/** A name as `inspect` lists it: its info, and its state after a check. */
export interface ListedName extends NameInfo {
  /** `live` (verified), `damaged` (verify found problems), `archived`, or `unchecked` (`--no-check`). */
  readonly state: 'live' | 'damaged' | 'archived' | 'unchecked'
  /** What verify found, for a damaged name. */
  readonly problems?: readonly string[]
}

/** Every name, each live one verified (as `concord verify` does) unless `check` is false. */
async function listNames(store: Store, check: boolean, out: Output): Promise<ListedName[]> {
  const names = await store.names()
  const listed: ListedName[] = []
  const progress = out.progress(check ? names.filter((n) => !n.archived).length : 0, 'inspect')
  try {
    for (const info of names) {
      if (info.archived) listed.push({ ...info, state: 'archived' })
      else if (!check) listed.push({ ...info, state: 'unchecked' })
      else {
        const problems = await store.verify(info.name).then(
          (report) => report.problems,
          (error: unknown) => [messageOf(error)],
        )
        listed.push(problems.length === 0 ? { ...info, state: 'live' } : { ...info, state: 'damaged', problems })
        progress.tick(info.name)
      }
    }
  } finally {
    progress.stop()
  }
  return listed
}

/** What to run for damaged names. */
export function repairHint(dir: string, names: readonly string[]): string {
  const one = names.length === 1 ? ` ${quoteArg(names[0])}` : ''
  return `to fix: concord repair --dir ${quoteArg(dir)}${one} (keeps every intact record; peers resend what was lost)`
}

/** A shell argument, quoted when it needs to be. */
export function quoteArg(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`
}

function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'null'
}

/** Registers inspect, history, at and revert. */
export function registerReadCommands(program: Command, ctx: CliContext): void {
  folderOptions(
    program
      .command('inspect')
      .argument('[name]', 'a name to print as JSON (omit to list every name)')
      .option('--no-check', 'list without verifying each name (STATE shows "unchecked" instead of live or DAMAGED)')
      .description('list every name (type, records, size, last change, state: live, archived or DAMAGED, checked as verify does), or print one value as JSON'),
  ).action(
    action(ctx, 'inspect', async (out, name: string | undefined, options: FolderOptions & { check: boolean }) => {
      await withFolder(options.dir, async ({ store, agentId: id }) => {
        if (name === undefined) {
          const names = await listNames(store, options.check, out)
          const damaged = names.filter((n) => n.state === 'damaged')
          out.result({ agentId: id ?? null, names }, () =>
            [
              names.length === 0
                ? `${options.dir}: no names`
                : table(
                    ['NAME', 'TYPE', 'RECORDS', 'LAST SEQ', 'SIZE', 'LAST CHANGE', 'STATE'],
                    names.map((n) => [
                      n.name,
                      n.type,
                      String(n.records),
                      String(n.lastSeq),
                      formatBytes(n.size),
                      formatTime(n.lastChange),
                      n.state === 'damaged' ? 'DAMAGED' : n.state,
                    ]),
                  ),
              ...damaged.flatMap((n) => (n.problems ?? []).map((problem) => `${n.name}: ${problem}`)),
              ...(damaged.length > 0
                ? [
                    repairHint(
                      options.dir,
                      damaged.map((n) => n.name),
                    ),
                  ]
                : []),
              id === undefined ? '(unclaimed: the first peer that opens this folder owns it)' : `agent "${id}"`,
            ].join('\n'),
          )
          return
        }
        const info = await nameInfo(store, name)
        if (info.archived) {
          out.result(
            { ...info, value: undefined },
            () => `"${name}" (${info.type}) is archived; run \`concord restore --dir ${options.dir} ${name}\` to bring it back`,
          )
          return
        }
        const value = (await store.open(name, info.type)).value()
        out.result({ ...info, value }, () => pretty(value))
      })
    }),
  )

  folderOptions(
    program
      .command('history')
      .argument('<name>', 'the name')
      .option('--from <seq>', 'first seq to list (default: the oldest kept)')
      .option('--limit <n>', 'at most this many records (with a filter: at most 100000)', '1000')
      .option('--reverse', 'newest first')
      .option('--agent <id>', 'only records by this author')
      .option('--since <time>', 'only records at or after this time (ISO 8601, or ms since the epoch)')
      .option('--until <time>', 'only records at or before this time (ISO 8601, or ms since the epoch)')
      .option('--cursor <cursor>', 'go on from where the previous page stopped (the "next" it printed)')
      .option(
        '--author-key <id=peerId>',
        'bind an author id to an Ed25519 PeerId to check its signatures with (repeatable; the folder owner is bound to <dir>/libp2p-key when there is one)',
        collectValues,
        [] as string[],
      )
      .description('list the log records of a name: seq, time, author, message, signature, kind, size, hash (and meta with --json)'),
  ).action(
    action(
      ctx,
      'history',
      async (
        out,
        name: string,
        options: FolderOptions & {
          from?: string
          limit: string
          reverse?: boolean
          agent?: string
          since?: string
          until?: string
          cursor?: string
          authorKey: string[]
        },
      ) => {
        const authorKeys = parseAuthorKeys(options.authorKey)
        const from = options.from === undefined ? undefined : parseInteger(options.from, '--from', 1)
        const limit = parseInteger(options.limit, '--limit', 1)
        const since = options.since === undefined ? undefined : parseTime(options.since, '--since')
        const until = options.until === undefined ? undefined : parseTime(options.until, '--until')
        await withFolder(
          options.dir,
          async ({ store }) => {
            await nameInfo(store, name)
            const filtered = options.agent !== undefined || since !== undefined || until !== undefined || options.cursor !== undefined
            const page = filtered
              ? await store.historyPage(name, {
                  from,
                  limit: Math.min(limit, MAX_HISTORY_PAGE),
                  reverse: options.reverse,
                  agent: options.agent,
                  since,
                  until,
                  cursor: options.cursor,
                })
              : await wholePage(store, name, { from, limit, reverse: options.reverse })
            const rows = page.entries.map((r) => ({
              seq: r.seq,
              time: formatTime((r.authored ?? r.hlc).wall),
              hlc: r.hlc,
              authored: r.authored ?? null,
              agent: r.agent,
              message: r.message ?? null,
              meta: r.meta ?? null,
              // verified (by the author's known key), unbound (verifies; nothing here binds its key to the author), invalid; null: unsigned.
              signature: r.signature ?? null,
              kind: r.kind,
              size: r.size,
              hash: r.hash,
            }))
            out.result(rows, () =>
              rows.length === 0
                ? `"${name}": no records match`
                : table(
                    ['SEQ', 'TIME', 'AGENT', 'MESSAGE', 'SIG', 'KIND', 'SIZE', 'HASH'],
                    rows.map((r) => [
                      String(r.seq),
                      r.time,
                      r.agent,
                      clipText(r.message ?? '', 48),
                      r.signature === null ? 'unsigned' : r.signature.status === 'invalid' ? 'INVALID' : r.signature.status,
                      r.kind,
                      formatBytes(r.size),
                      r.hash.slice(0, 16),
                    ]),
                  ),
            )
            // The next page's cursor on stderr, so that stdout stays one JSON array.
            if (page.cursor) out.note(`more: --cursor ${page.cursor}`)
          },
          { authorKeys },
        )
      },
    ),
  )

  folderOptions(
    program
      .command('at')
      .argument('<name>', 'the name')
      .argument('<seq>', 'the record after which to show the value (0 = empty)')
      .description('print the value of a name as it was right after record SEQ'),
  ).action(
    action(ctx, 'at', async (out, name: string, seqText: string, options: FolderOptions) => {
      const seq = parseInteger(seqText, 'SEQ')
      await withFolder(options.dir, async ({ store }) => {
        const info = await nameInfo(store, name)
        if (seq > info.lastSeq) throw new CliError(ExitCodes.NOT_FOUND, `"${name}" has no record ${seq} (its last is ${info.lastSeq})`)
        const value = (await store.at(name, seq)).value()
        out.result({ name, seq, value }, () => pretty(value))
      })
    }),
  )

  folderOptions(
    program
      .command('revert')
      .argument('<name>', 'the name')
      .argument('<seq>', 'the record whose value to go back to')
      .description('write a new change (replicated like any other) that brings NAME back to its value at SEQ'),
  ).action(
    action(ctx, 'revert', async (out, name: string, seqText: string, options: FolderOptions) => {
      const seq = parseInteger(seqText, 'SEQ')
      await withFolder(options.dir, async ({ store }) => {
        const info = await nameInfo(store, name)
        if (seq > info.lastSeq) throw new CliError(ExitCodes.NOT_FOUND, `"${name}" has no record ${seq} (its last is ${info.lastSeq})`)
        const newSeq = (await store.revert(name, seq)) ?? null
        await store.flush()
        const value = (await store.open(name, info.type)).value()
        out.result({ name, to: seq, seq: newSeq, value }, () =>
          newSeq === null
            ? `"${name}" already has its value at seq ${seq}: nothing written`
            : `"${name}" reverted to its value at seq ${seq}: new record ${newSeq}\n${pretty(value)}`,
        )
      })
    }),
  )
}
