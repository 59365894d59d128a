/**
 * The one way a tool changes a name: opened through the admission (write
 * intent), checked against the client's version token, changed in one
 * transaction logged under the client's agent with its `message`, then
 * answered with the new version token.
 *
 * Conditional writes: the token's fingerprint is compared with the live
 * replica's in the same turn as the change is made, so nothing can slip
 * between. A stale token refuses the write (`CONCORD_CONFLICT`) with what
 * changed since (the diff from the token's seq to now) and who changed it;
 * a text edit instead merges (mcp/text.ts) and says so (`concurrent`, and
 * the changes it merged with).
 */
import type * as Y from 'yjs'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { changesBetween } from '../../persistence/history/diff.ts'
import { clip } from '../errors.ts'
import { openToWrite, type OpenedName } from '../principal.ts'
import { decodeToken, encodeToken, fingerprint, pinned, type VersionToken } from '../version-token.ts'
import type { ToolAnswer, ToolContext } from './tool.ts'

/** What a write does. */
export interface WriteSpec<R extends Record<string, unknown>> {
  readonly tool: string
  readonly name: string
  /** Types the tool works on; `creates`: the type of a name it creates (none: the name must exist). */
  readonly accepts: readonly ReplicaType[]
  readonly creates?: ReplicaType
  readonly message?: string | undefined
  readonly ifVersion?: string | undefined
  /** A text edit: on a stale token it merges instead of conflicting. */
  readonly merges?: boolean
  /**
   * Checks, before a name that does not exist is created, that the change
   * can be made on an empty one (so that a refused write creates nothing).
   */
  readonly checkNew?: (type: ReplicaType) => void
  /** The change, made synchronously inside the transaction (with the document as read, when merging); its result fields. */
  readonly change: (opened: OpenedName, readDoc: Y.Doc | undefined) => R
}

/** Runs a write (see the module comment). */
export async function writeFlow<R extends Record<string, unknown>>(context: ToolContext, spec: WriteSpec<R>): Promise<ToolAnswer> {
  const { peer, principal } = context
  const token = spec.ifVersion === undefined ? undefined : decodeToken(spec.ifVersion)
  const opened = await openToWrite(peer, principal, spec.name, spec.accepts, spec.creates, spec.tool, spec.checkNew)
  let readDoc: Y.Doc | undefined
  if (token && spec.merges && fingerprint(opened.replica) !== token.fingerprint) {
    readDoc = await documentAsRead(context, opened, token)
    if (!readDoc) return conflict(context, opened, token, spec.ifVersion!, 'the version you read is no longer in the log to merge onto')
  }
  let stale = false
  let result: R | undefined
  const records = await peer.transact(
    () => {
      if (token && !spec.merges && fingerprint(opened.replica) !== token.fingerprint) {
        stale = true
        return
      }
      result = spec.change(opened, readDoc)
    },
    { agent: principal.local ? undefined : principal.agent, message: spec.message, meta: { via: 'mcp', tool: spec.tool } },
  )
  if (stale) return conflict(context, opened, token!, spec.ifVersion!)
  const seq = records.filter((record) => record.name === opened.name).at(-1)?.seq ?? null
  const { token: after } = await pinned(peer.store, opened.name, opened.replica, () => undefined)
  let merged: Record<string, unknown> = {}
  if (readDoc && token?.seq !== undefined && seq !== null) {
    const [read, before] = await Promise.all([peer.store.at(opened.name, token.seq), peer.store.at(opened.name, seq - 1)])
    merged = {
      concurrent: true,
      changes: changesBetween(opened.type, read, before),
      note: 'the text changed since your read: your edit was applied to the text you read and merged with those changes; read again before relying on positions',
    }
  }
  return { result: { name: opened.name, type: opened.type, version: encodeToken(after), seq, ...result, ...merged } }
}

/** The document as the client read it (the token's seq), if it is still in the log and matches the token. */
async function documentAsRead(context: ToolContext, opened: OpenedName, token: VersionToken): Promise<Y.Doc | undefined> {
  if (token.seq === undefined || opened.type !== 'yjs') return undefined
  try {
    const read = (await context.peer.store.at(opened.name, token.seq)) as YjsReplica
    return fingerprint(read) === token.fingerprint ? read.doc : undefined
  } catch {
    return undefined
  }
}

/** The answer to a stale conditional write: nothing written; the current version, what changed since and who changed it. */
export async function conflict(context: ToolContext, opened: OpenedName, token: VersionToken, given: string, why?: string): Promise<ToolAnswer> {
  const { store } = context.peer
  const read = token.seq === undefined ? undefined : await store.at(opened.name, token.seq).catch(() => undefined)
  const validRead = read !== undefined && fingerprint(read) === token.fingerprint ? read : undefined
  const { token: now, value: changes } = await pinned(store, opened.name, opened.replica, () =>
    validRead ? changesBetween(opened.type, validRead, opened.replica) : null,
  )
  let changedBy: Record<string, unknown> | null = null
  if (validRead && token.seq !== undefined) {
    const records = await store.history(opened.name, { from: token.seq + 1, limit: 200 })
    changedBy = {
      records: records.length,
      agents: [...new Set(records.map((record) => record.agent))].slice(0, 20),
      ...(records.length === 200 ? { more: true } : {}),
    }
  }
  const error = new ConcordError(
    ErrorCodes.CONFLICT,
    `"${clip(opened.name, 200)}" changed since version ${given}: nothing was written` +
      `${why ? ` (${why})` : ''}. Read it again and redo the change on what it holds now, or write without ifVersion to merge regardless.`,
  )
  return { error, extra: { version: encodeToken(now), changes, changedBy } }
}
