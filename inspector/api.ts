/**
 * The inspector's read-only API, under `<path>/api/` on the peer's
 * listener: what a browser peer cannot see from its own replicas (the
 * serving peer's log, blame, diffs, sessions and durability). Every answer
 * is JSON; nothing here writes.
 *
 * - `status`: `peer.status()`, who is asking (`agent`), and the presence
 *   entries it may see (those about no name or a name it may read).
 * - `names`: the names the caller may read, with type, records, size, last
 *   change and who made it (and why, once records carry a message).
 * - `history?name=&limit=`: the newest records of a name (at most 1000,
 *   default 200), oldest first: seq, agent, HLC, kind, size, message, meta.
 * - `at?name=&seq=`: the value right after record `seq` (0: empty).
 * - `diff?name=&from=&to=`: what changed between two seqs.
 * - `blame?name=`: who wrote what is there now.
 *
 * A name the caller may not read is answered exactly as a name that does
 * not exist (404, the same body): it learns nothing of it.
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { PeerCore } from '../peer/peer-core.ts'
import { isValidName, type AgentId } from '../sync/index.ts'
import { blame, changesBetween, toJson } from './history-adapter.ts'

/** What the API reads of its peer. */
export type InspectedPeer = Pick<PeerCore, 'agentId' | 'store' | 'admission' | 'status' | 'presence'>

/** An answer: HTTP status and a JSON body. */
export interface ApiAnswer {
  readonly status: number
  readonly body: unknown
}

/** Largest number of names listed at once. */
export const MAX_LISTED_NAMES = 2000
/** Largest number of records a history answer holds. */
export const MAX_HISTORY_RECORDS = 1000

const notFound = (): ApiAnswer => ({ status: 404, body: { error: { code: ErrorCodes.NOT_FOUND, message: 'no such name' } } })
const invalid = (message: string): ApiAnswer => ({ status: 400, body: { error: { code: ErrorCodes.INVALID_ARGUMENT, message } } })

/** The read-only API of one peer (see the module comment). */
export class InspectorApi {
  /** Who wrote each listed name's newest record, by name (valid while its lastSeq is the same): a poll reads no log for a name that did not change. */
  private readonly lastWriters = new Map<string, { readonly seq: number; readonly agent: string | null; readonly message: string | null }>()

  constructor(private readonly peer: InspectedPeer) {}

  /** Answers `endpoint` (the path after `api/`) for `agent`, already authenticated. Never throws. */
  async answer(endpoint: string, query: URLSearchParams, agent: string): Promise<ApiAnswer> {
    try {
      switch (endpoint) {
        case 'status': {
          const presence = this.peer.presence.list((name) => name === undefined || this.mayRead(agent, name))
          return { status: 200, body: { ...this.peer.status(), agent, presence } }
        }
        case 'names':
          return { status: 200, body: await this.names(agent, query) }
        case 'history':
          return await this.withName(query, agent, (name, type) => this.history(name, type, query))
        case 'at':
          return await this.withName(query, agent, (name, type) => this.at(name, type, query))
        case 'diff':
          return await this.withName(query, agent, (name, type) => this.diff(name, type, query))
        case 'blame':
          return await this.withName(query, agent, (name) => this.blame(name))
        default:
          return { status: 404, body: { error: { code: ErrorCodes.NOT_FOUND, message: `no endpoint ${endpoint.slice(0, 64)}` } } }
      }
    } catch (error) {
      if (isConcordError(error, ErrorCodes.NOT_FOUND)) return notFound()
      if (isConcordError(error, ErrorCodes.INVALID_ARGUMENT)) return invalid(error.message)
      return { status: 500, body: { error: { code: isConcordError(error) ? error.code : null, message: 'the request failed' } } }
    }
  }

  private mayRead(agent: string, name: string): boolean {
    return isValidName(name) && this.peer.admission.takes(name) && this.peer.admission.mayRead(agent as AgentId, name)
  }

  /** A page of the names `agent` may read (`prefix`, `cursor`: the query's), in key order; `cursor` in the answer when more follow. */
  private async names(agent: string, query: URLSearchParams): Promise<unknown> {
    const page = await this.peer.store.pageNames({
      prefix: query.get('prefix') ?? undefined,
      cursor: query.get('cursor') ?? undefined,
      limit: MAX_LISTED_NAMES,
      where: (info) => this.mayRead(agent, info.name),
    })
    const listed = page.names
    const names = await Promise.all(
      listed.map(async (info) => {
        const writer = await this.lastWriter(info.name, info.lastSeq)
        return {
          name: info.name,
          type: info.type,
          records: info.records,
          lastSeq: info.lastSeq,
          size: info.size,
          lastChange: info.lastChange,
          lastAgent: writer.agent,
          lastMessage: writer.message,
        }
      }),
    )
    if (this.lastWriters.size > 2 * MAX_LISTED_NAMES) this.lastWriters.clear()
    return { names, ...(page.cursor !== undefined ? { truncated: true, cursor: page.cursor } : {}) }
  }

  private async lastWriter(name: string, seq: number): Promise<{ readonly agent: string | null; readonly message: string | null }> {
    const known = this.lastWriters.get(name)
    if (known !== undefined && known.seq === seq) return known
    const [last] = seq > 0 ? await this.peer.store.history(name, { reverse: true, limit: 1 }) : []
    const writer = { seq, agent: last?.agent ?? null, message: messageOf(last) }
    this.lastWriters.set(name, writer)
    return writer
  }

  private async withName(query: URLSearchParams, agent: string, run: (name: string, type: ReplicaType) => Promise<ApiAnswer>): Promise<ApiAnswer> {
    const name = query.get('name')
    if (name === null || !this.mayRead(agent, name)) return notFound()
    const type = await this.peer.store.typeOf(name)
    if (type === undefined) return notFound()
    return run(name, type)
  }

  private async history(name: string, type: ReplicaType, query: URLSearchParams): Promise<ApiAnswer> {
    const limit = seqParam(query, 'limit', 200)
    if (limit === undefined || limit < 1) return invalid('limit must be an integer >= 1')
    const newest = await this.peer.store.history(name, { reverse: true, limit: Math.min(limit, MAX_HISTORY_RECORDS) })
    const records = newest.reverse().map((entry) => ({
      seq: entry.seq,
      agent: entry.agent,
      wall: entry.hlc.wall,
      counter: entry.hlc.logical,
      kind: entry.kind,
      size: entry.size,
      message: messageOf(entry),
      meta: metaOf(entry),
    }))
    const [oldest] = await this.peer.store.history(name, { limit: 1 })
    return { status: 200, body: { name, type, oldestSeq: oldest?.seq ?? 0, lastSeq: this.peer.store.committedSeq(name), records } }
  }

  private async at(name: string, type: ReplicaType, query: URLSearchParams): Promise<ApiAnswer> {
    const seq = seqParam(query, 'seq')
    if (seq === undefined) return invalid('seq must be an integer >= 0')
    const replica = await this.peer.store.at(name, seq)
    return { status: 200, body: { name, type, seq, value: toJson(replica.value()) } }
  }

  private async diff(name: string, type: ReplicaType, query: URLSearchParams): Promise<ApiAnswer> {
    const from = seqParam(query, 'from')
    const to = seqParam(query, 'to')
    if (from === undefined || to === undefined) return invalid('from and to must be integers >= 0')
    const [before, after] = await Promise.all([this.peer.store.at(name, from), this.peer.store.at(name, to)])
    return { status: 200, body: { name, type, from, to, changes: changesBetween(type, before, after) } }
  }

  private async blame(name: string): Promise<ApiAnswer> {
    const type = await this.peer.store.typeOf(name)
    if (type === undefined) return notFound()
    const live = await this.peer.store.open(name, type)
    return { status: 200, body: await blame(this.peer.store, name, live) }
  }
}

/** A record's message, once records carry one (issue 16); null until then. */
function messageOf(entry: unknown): string | null {
  const message = (entry as { message?: unknown } | undefined)?.message
  return typeof message === 'string' ? message : null
}

/** A record's application metadata, once records carry it (issue 16); null until then. */
function metaOf(entry: unknown): Record<string, unknown> | null {
  const meta = (entry as { meta?: unknown } | undefined)?.meta
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : null
}

/** A query parameter that is a seq or count: an integer in [0, 2^53); `fallback` when absent; undefined when malformed. */
function seqParam(query: URLSearchParams, key: string, fallback?: number): number | undefined {
  const raw = query.get(key)
  if (raw === null) return fallback
  if (!/^\d{1,15}$/.test(raw)) return undefined
  return Number(raw)
}
