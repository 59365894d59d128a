/**
 * The page's client of its serving peer's read-only API (`<base>/api/...`):
 * every request carries the page's credentials in headers (never in the
 * URL): `Authorization: Bearer <token>` and `X-Concord-Peer: <id>`.
 */

/** Who the page is: the agent id it claims, and the token proving it (empty: none). */
export interface Credentials {
  readonly peer: string
  readonly token: string
}

/** An answer other than 200, with the API's error code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
  ) {
    super(message)
  }
}

/** A record as the history endpoint gives it. */
export interface RecordInfo {
  readonly seq: number
  readonly agent: string
  readonly wall: number
  readonly counter: number
  readonly kind: 'delta' | 'state'
  readonly size: number
  readonly message: string | null
  readonly meta?: Readonly<Record<string, unknown>> | null
}

/** A name as the names endpoint lists it. */
export interface NameRow {
  readonly name: string
  readonly type: string
  readonly records: number
  readonly lastSeq: number
  readonly size: number
  readonly lastChange: number
  readonly lastAgent: string | null
  readonly lastMessage: string | null
}

/** A session of the serving peer (peer.status()). */
export interface SessionRow {
  readonly agentId: string | null
  readonly state: string
  readonly synced: boolean
  readonly lag: { readonly commits: number; readonly bytes: number }
  readonly lastAckAt: number | null
  readonly refusedWrites: number
  readonly rejectedByRemote: number
  readonly malformed: number
  readonly bytesIn: number
  readonly bytesOut: number
}

/** The status endpoint's answer. */
export interface StatusInfo {
  readonly agentId: string
  readonly now: number
  readonly agent: string
  readonly durability: {
    readonly mode: string
    readonly rpoMs?: number
    readonly lastFsyncAt: number | null
    readonly batches: number
    readonly fsyncs: number
  }
  readonly sessions: readonly SessionRow[]
  /** Who says it works on what (peer.presence), as far as the caller may see. */
  readonly presence: ReadonlyArray<{
    readonly agent: string
    readonly peer: string
    readonly name?: string
    readonly status: unknown
    readonly expiresAt: number
  }>
}

/** The API of the peer that served the page. */
export class InspectorClient {
  constructor(
    private readonly base: string,
    private readonly credentials: Credentials,
  ) {}

  /** GETs `endpoint` with `params`; rejects with an {@link ApiError} for any answer but 200. */
  async get<T>(endpoint: string, params: Record<string, string | number> = {}): Promise<T> {
    const query = new URLSearchParams(Object.entries(params).map(([key, value]) => [key, String(value)])).toString()
    const headers: Record<string, string> = { 'x-concord-peer': this.credentials.peer }
    if (this.credentials.token !== '') headers.authorization = `Bearer ${this.credentials.token}`
    const response = await fetch(`${this.base}/api/${endpoint}${query ? `?${query}` : ''}`, { headers, cache: 'no-store' })
    const body = (await response.json().catch(() => ({}))) as { error?: { code?: string | null; message?: string } }
    if (!response.ok) throw new ApiError(response.status, body.error?.code ?? null, body.error?.message ?? `HTTP ${response.status}`)
    return body as T
  }
}
