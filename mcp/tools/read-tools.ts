/**
 * Tools that read: `list_names`, `read`, `history`, `at`, `diff`, `blame`.
 * Every one answers only about names the client may read (others are
 * absent, in the same words as a name that does not exist) and in pages.
 */
import { z } from 'zod'
import type { Replica } from '../../crdt/replica.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { KNOWN_TYPES } from '../../sync/index.ts'
import { blame } from '../../persistence/history/blame.ts'
import { changesBetween } from '../../persistence/history/diff.ts'
import { invalid } from '../errors.ts'
import { MCP_LIMITS } from '../limits.ts'
import { formatPointer, pageOf, parsePointer, toJson, type Page } from '../paging.ts'
import { openToRead } from '../principal.ts'
import { documentFields } from '../text.ts'
import { encodeToken, pinned } from '../version-token.ts'
import { defineTool, isoTime, nameArg, seqArg } from './tool.ts'

const typeArg = z.enum(KNOWN_TYPES as unknown as [string, ...string[]])
const pageArgs = {
  path: z.string().max(4096).optional().describe('JSON Pointer (RFC 6901) of the part to read, e.g. "/tasks/0"; "" or absent: the whole value'),
  field: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe('Yjs documents: the top-level field to read (a text is returned as text); default: the only text, if the document has one'),
  offset: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('where the page starts: a character of a text, an item of an array or an object'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MCP_LIMITS.textPageChars)
    .optional()
    .describe(`page size: characters of a text (default ${MCP_LIMITS.textPageChars}) or items (at most ${MCP_LIMITS.maxPageItems})`),
}

/** The path a read means: `path`, else a Yjs `field`, else a Yjs document's only text. */
function readPath(replica: Replica, args: { path?: string | undefined; field?: string | undefined }): string | undefined {
  if (args.path !== undefined && args.field !== undefined) throw invalid('give either path or field')
  if (args.path !== undefined) return args.path
  if (replica.type !== 'yjs') return undefined
  if (args.field !== undefined) return formatPointer([args.field])
  const fields = documentFields((replica as YjsReplica).doc)
  return fields.length === 1 && fields[0].kind === 'text' ? formatPointer([fields[0].field]) : undefined
}

/** A page as the answer shows it: a text as `text`, anything else as `value`. */
function showPage(page: Page, replica: Replica): Record<string, unknown> {
  const { value, kind, ...rest } = page
  if (kind !== 'text') return { kind, value, ...rest }
  const tokens = parsePointer(page.path)
  return { ...(replica.type === 'yjs' && tokens.length === 1 ? { field: tokens[0] } : {}), text: value, ...rest }
}

export const listNames = defineTool({
  name: 'list_names',
  title: 'List names',
  description:
    'Lists the shared names you may read (counters, sets, registers, maps, Yjs and Automerge documents), in name order, ' +
    'with their type, size, record count and last change (who, when). Filter by prefix and type; page with cursor.',
  input: z.strictObject({
    prefix: z.string().max(1024).optional().describe('only names starting with this'),
    type: typeArg.optional().describe('only names of this type'),
    cursor: z.string().max(1024).optional().describe('the nextCursor of the previous page'),
    limit: z.number().int().min(1).max(MCP_LIMITS.maxPageItems).optional().describe('names per page (default 50)'),
  }),
  annotations: { readOnlyHint: true },
  async run(args, { peer, principal }) {
    const limit = args.limit ?? 50
    const { names: page, cursor: next } = await peer.store.pageNames({
      prefix: args.prefix,
      cursor: args.cursor,
      limit,
      where: (info) => principal.mayRead(info.name) && (args.type === undefined || info.type === args.type),
    })
    const names = []
    for (const info of page) {
      const [last] = info.archived ? [] : await peer.history(info.name, { reverse: true, limit: 1 }).catch(() => [])
      names.push({
        name: info.name,
        type: info.type,
        records: info.records,
        lastSeq: info.lastSeq,
        bytes: info.size,
        lastChange: { at: isoTime(info.lastChange), ...(last ? { agent: last.agent, seq: last.seq } : {}) },
        ...(info.archived ? { archived: true } : {}),
      })
    }
    return { result: { names, ...(next !== undefined ? { nextCursor: next } : {}) } }
  },
})

export const read = defineTool({
  name: 'read',
  title: 'Read a name',
  description:
    'Reads a name\'s value as JSON, with its version token. A Yjs document\'s text is returned as text (its only text, or "field"); ' +
    'large values come in pages (path, offset, limit; "nextOffset" says where the next page starts). Give the "version" back as ifVersion on a write ' +
    'to write only if nothing changed since.',
  input: z.strictObject({ name: nameArg, ...pageArgs }),
  annotations: { readOnlyHint: true },
  async run(args, { peer, principal }) {
    const opened = await openToRead(peer, principal, args.name)
    const path = readPath(opened.replica, args)
    const { token, value } = await pinned(peer.store, opened.name, opened.replica, () =>
      pageOf(toJson(opened.replica.value()), { path, offset: args.offset, limit: args.limit }, `"${args.name}"`),
    )
    return { result: { name: opened.name, type: opened.type, version: encodeToken(token), ...showPage(value, opened.replica) } }
  },
})

export const at = defineTool({
  name: 'at',
  title: 'Read a past version',
  description: 'Reads a name as it was right after record "seq" of its history (0: before the first), paged like read.',
  input: z.strictObject({ name: nameArg, seq: seqArg.describe('the record (from history)'), ...pageArgs }),
  annotations: { readOnlyHint: true },
  async run(args, { peer, principal }) {
    const opened = await openToRead(peer, principal, args.name)
    const past = await peer.store.at(opened.name, args.seq)
    const page = pageOf(toJson(past.value()), { path: readPath(past, args), offset: args.offset, limit: args.limit }, `"${args.name}" at seq ${args.seq}`)
    return { result: { name: opened.name, type: opened.type, seq: args.seq, ...showPage(page, past) } }
  },
})

export const history = defineTool({
  name: 'history',
  title: 'History of a name',
  description:
    'The records of a name, newest first: seq, time, agent (who made the change), message (why) and meta when given, kind and size. Page with before (a seq); ' +
    'filter by agent. Use at, diff and blame with these seqs.',
  input: z.strictObject({
    name: nameArg,
    limit: z.number().int().min(1).max(100).optional().describe('records per page (default 20)'),
    before: seqArg.optional().describe('only records older than this seq (the "nextBefore" of the previous page)'),
    agent: z.string().min(1).max(256).optional().describe('only records by this agent'),
  }),
  annotations: { readOnlyHint: true },
  async run(args, { peer, principal }) {
    const opened = await openToRead(peer, principal, args.name)
    const limit = args.limit ?? 20
    const out: Array<Record<string, unknown>> = []
    let upper = args.before === undefined ? undefined : args.before - 1
    let scanned = 0
    let exhausted = false
    while (out.length < limit && scanned < MCP_LIMITS.maxHistoryScan) {
      if (upper !== undefined && upper < 1) {
        exhausted = true
        break
      }
      const page = await peer.history(opened.name, {
        reverse: true,
        limit: Math.min(200, MCP_LIMITS.maxHistoryScan - scanned),
        ...(upper === undefined ? {} : { from: upper }),
      })
      if (page.length === 0) {
        exhausted = true
        break
      }
      for (const record of page) {
        scanned++
        upper = record.seq - 1
        if (args.agent !== undefined && record.agent !== args.agent) continue
        out.push({
          seq: record.seq,
          at: isoTime((record.authored ?? record.hlc).wall),
          agent: record.agent,
          ...(record.message !== undefined ? { message: record.message } : {}),
          ...(record.meta !== undefined ? { meta: record.meta } : {}),
          kind: record.kind,
          bytes: record.size,
          hash: record.hash.slice(0, 12),
        })
        if (out.length === limit) break
      }
    }
    const more = !exhausted && upper !== undefined && upper >= 1
    return {
      result: {
        name: opened.name,
        type: opened.type,
        records: out,
        ...(more ? { nextBefore: upper! + 1 } : {}),
        ...(args.agent !== undefined ? { scanned } : {}),
      },
    }
  },
})

export const diff = defineTool({
  name: 'diff',
  title: 'What changed',
  description:
    'What changed in a name from record "from" to record "to" (default: now): a counter\'s delta, a set\'s added and removed elements, ' +
    "a register's old and new value, a JSON Patch for maps and Automerge documents, inserted and deleted spans for each text of a Yjs document.",
  input: z.strictObject({
    name: nameArg,
    from: seqArg.describe('the older record (0: the empty state)'),
    to: seqArg.optional().describe('the newer record (default: the current state)'),
  }),
  annotations: { readOnlyHint: true },
  async run(args, { peer, principal }) {
    const opened = await openToRead(peer, principal, args.name)
    const older = await peer.store.at(opened.name, args.from)
    if (args.to !== undefined) {
      const newer = await peer.store.at(opened.name, args.to)
      return { result: { name: opened.name, type: opened.type, from: args.from, to: args.to, changes: changesBetween(opened.type, older, newer) } }
    }
    const { token, value } = await pinned(peer.store, opened.name, opened.replica, () => changesBetween(opened.type, older, opened.replica))
    return { result: { name: opened.name, type: opened.type, from: args.from, to: token.seq ?? null, version: encodeToken(token), changes: value } }
  },
})

export const blameTool = defineTool({
  name: 'blame',
  title: 'Who wrote what',
  description:
    'Who wrote what a name holds now: for a Yjs text, each span with the agent and record that inserted it; for maps, Automerge ' +
    "documents and registers, each path with who set it last; for counters, each agent's contribution; for sets, who added each element. " +
    'Replays the newest "limit" records (default 500); older content is marked "before".',
  input: z.strictObject({
    name: nameArg,
    field: z.string().min(1).max(1024).optional().describe('Yjs documents: the field (default: the only text)'),
    limit: z.number().int().min(1).max(MCP_LIMITS.maxBlameRecords).optional().describe('records to replay (default 500)'),
  }),
  annotations: { readOnlyHint: true },
  async run(args, { peer, principal }) {
    const opened = await openToRead(peer, principal, args.name)
    await peer.store.flush()
    return { result: { ...(await blame(peer.store, opened.name, opened.replica, { field: args.field, limit: args.limit })) } }
  },
})

/** Every reading tool. */
export const READ_TOOLS = [listNames, read, at, history, diff, blameTool]
