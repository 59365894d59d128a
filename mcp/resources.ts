/**
 * Names as MCP resources: `concord://name/<name>` (the name URI-encoded),
 * listed in pages (only names the client may read), read as JSON (the value
 * with its version token, bounded like a read), and subscribable: a
 * subscribed name's `notifications/resources/updated` is sent whenever a
 * change of it is committed here, from this client, another client or any
 * peer (coalesced over {@link NOTIFY_DELAY_MS}); a new name sends
 * `notifications/resources/list_changed`.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import type { ListResourcesResult, ReadResourceResult, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js'
import { ErrorCodes } from '../crdt/errors.ts'
import type { Peer } from '../peer/index.ts'
import { describe } from './errors.ts'
import { MCP_LIMITS } from './limits.ts'
import { pageOf, toJson } from './paging.ts'
import { openToRead, type Principal } from './principal.ts'
import { encodeToken, pinned } from './version-token.ts'

/** The URI prefix of names. */
export const NAME_URI_PREFIX = 'concord://name/'
/** JSON-RPC error code of a resource that does not exist (MCP). */
const RESOURCE_NOT_FOUND = -32002
const INVALID_PARAMS = -32602
/** Delay over which updates of one resource are coalesced into one notification, ms. */
const NOTIFY_DELAY_MS = 50
/** Resources one client may be subscribed to. */
const MAX_SUBSCRIPTIONS = 1024

/** The URI of a name. */
export function nameUri(name: string): string {
  return NAME_URI_PREFIX + encodeURIComponent(name)
}

/** The name of a URI; a JSON-RPC error when it is not a Concord name URI. */
export function uriName(uri: string): string {
  if (typeof uri !== 'string' || !uri.startsWith(NAME_URI_PREFIX) || uri.length > NAME_URI_PREFIX.length + 4 * 1024 * 3) {
    throw new McpError(INVALID_PARAMS, `CONCORD_INVALID_ARGUMENT: not a Concord resource (${NAME_URI_PREFIX}<name>)`, { code: ErrorCodes.INVALID_ARGUMENT })
  }
  try {
    return decodeURIComponent(uri.slice(NAME_URI_PREFIX.length))
  } catch {
    throw new McpError(INVALID_PARAMS, 'CONCORD_INVALID_ARGUMENT: the name in the URI is not URI-encoded', { code: ErrorCodes.INVALID_ARGUMENT })
  }
}

/** A Concord failure as the JSON-RPC error of a resource request. */
function resourceError(error: unknown): McpError {
  const { code, message } = describe(error)
  return new McpError(code === ErrorCodes.NOT_FOUND ? RESOURCE_NOT_FOUND : INVALID_PARAMS, `${code}: ${message}`, { code })
}

/** The template of name URIs. */
export const NAME_TEMPLATE: ResourceTemplate = {
  uriTemplate: `${NAME_URI_PREFIX}{name}`,
  name: 'name',
  title: 'A shared name',
  description: 'A counter, set, register, map or document shared by the peers, as JSON (its value and version token)',
  mimeType: 'application/json',
}

/** The resources of one client: listing, reading, subscriptions and their notifications. */
export class NameResources {
  private readonly subscribed = new Set<string>()
  private readonly due = new Set<string>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private listChanged = false
  private readonly offCommitted: () => void
  private closed = false

  constructor(
    private readonly peer: Peer,
    private readonly principal: Principal,
    private readonly notify: { updated(uri: string): Promise<void>; listChanged(): Promise<void> },
  ) {
    this.offCommitted = peer.store.events.on('committed', ({ records }) => {
      for (const record of records) {
        if (this.subscribed.has(record.name)) this.due.add(record.name)
        // A name's first record: the list of names changed.
        if (record.seq === 1 && this.principal.mayRead(record.name)) this.listChanged = true
      }
      if (this.due.size > 0 || this.listChanged) this.schedule()
    })
  }

  /** A page of the names the client may read, as resources. */
  async list(cursor: string | undefined): Promise<ListResourcesResult> {
    const { names: page, cursor: next } = await this.peer.store.pageNames({
      cursor,
      limit: MCP_LIMITS.maxPageItems,
      where: (info) => this.principal.mayRead(info.name),
    })
    return {
      resources: page.map((info) => ({
        uri: nameUri(info.name),
        name: info.name,
        description: `${info.type}, ${info.records} records`,
        mimeType: 'application/json',
      })),
      ...(next !== undefined ? { nextCursor: next } : {}),
    }
  }

  /** Reads a name resource: `{ name, type, version, value }` (a large value: its first page, and how to read the rest). */
  async read(uri: string): Promise<ReadResourceResult> {
    const name = uriName(uri)
    try {
      const opened = await openToRead(this.peer, this.principal, name)
      const { token, value } = await pinned(this.peer.store, opened.name, opened.replica, () => pageOf(toJson(opened.replica.value()), {}, `"${name}"`))
      const body = {
        name,
        type: opened.type,
        version: encodeToken(token),
        value: value.value,
        ...(value.nextOffset !== undefined || value.truncated ? { more: 'larger than one page: use the read tool with path, offset and limit' } : {}),
      }
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] }
    } catch (error) {
      throw resourceError(error)
    }
  }

  /** Subscribes to a name (it must exist and be readable). */
  async subscribe(uri: string): Promise<void> {
    const name = uriName(uri)
    try {
      await openToRead(this.peer, this.principal, name)
    } catch (error) {
      throw resourceError(error)
    }
    if (!this.subscribed.has(name) && this.subscribed.size >= MAX_SUBSCRIPTIONS) {
      throw new McpError(INVALID_PARAMS, `CONCORD_LIMIT_EXCEEDED: at most ${MAX_SUBSCRIPTIONS} subscriptions`, { code: ErrorCodes.LIMIT_EXCEEDED })
    }
    this.subscribed.add(name)
  }

  /** Ends a subscription. */
  unsubscribe(uri: string): void {
    this.subscribed.delete(uriName(uri))
  }

  /** Stops notifying. */
  close(): void {
    this.closed = true
    this.offCommitted()
    if (this.timer) clearTimeout(this.timer)
  }

  private schedule(): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => this.flush(), NOTIFY_DELAY_MS)
    this.timer.unref?.()
  }

  private flush(): void {
    this.timer = undefined
    if (this.closed) return
    const names = [...this.due]
    this.due.clear()
    for (const name of names) {
      if (this.subscribed.has(name) && this.principal.mayRead(name)) void this.notify.updated(nameUri(name)).catch(() => undefined)
    }
    if (this.listChanged) {
      this.listChanged = false
      void this.notify.listChanged().catch(() => undefined)
    }
  }
}
