/**
 * MCP over streamable HTTP at `/mcp` on a peer's listener
 * (`peer.listen({ routes: [mcpRoute(peer)] })`, `concord serve --mcp`):
 * the SDK's `StreamableHTTPServerTransport`, one MCP session per client,
 * each acting for the agent its credentials name.
 *
 * Every request is admitted before anything is read of it, as every door
 * of the peer is (sync/admission.ts): a browser page's request (an
 * `Origin` not allowed: DNS rebinding) is refused 403; then the
 * credentials, as for a y-websocket client (peer/http-credentials.ts): a
 * bearer token (`Authorization: Bearer`, or `?token=`) and the agent id
 * (`X-Concord-Peer`, or `?peer=`; none: an id generated per session,
 * `mcp-<12 hex>`), checked with the peer's `auth.accept`; refused: 401. A
 * session belongs to the agent that opened it: a request for it with other
 * credentials is answered as for a session that does not exist (404).
 * Sessions are bounded (in all and per agent: 503 beyond) and closed when
 * idle.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { HttpRoute, Peer } from '../peer/index.ts'
import { readCredentials } from '../peer/index.ts'
import type { AgentId, PresentedCredentials } from '../sync/index.ts'
import { remotePrincipal } from './principal.ts'
import { ConcordMcpServer, type McpServerOptions } from './server.ts'

/** Options of {@link mcpRoute}. */
export interface McpHttpOptions extends McpServerOptions {
  /** Mount point (default `/mcp`). */
  readonly path?: string | undefined
  /** Sessions open at once (default 256), and per agent (default 16). */
  readonly maxSessions?: number | undefined
  readonly maxSessionsPerAgent?: number | undefined
  /** A session without requests for this long is closed (default 30 minutes). */
  readonly idleTimeoutMs?: number | undefined
  /** Origins of browser pages allowed to call (default none: a request with an `Origin` header is refused). */
  readonly allowedOrigins?: readonly string[] | undefined
}

/** Counters of the MCP route. */
export interface McpHttpStats {
  sessions: number
  opened: number
  refusedCredentials: number
  refusedOrigin: number
  refusedBusy: number
  unknownSession: number
}

interface Session {
  readonly id: string
  readonly agent: string
  readonly transport: StreamableHTTPServerTransport
  readonly server: ConcordMcpServer
  lastActive: number
  open: number
}

const JSON_HEADERS = { 'content-type': 'application/json', connection: 'close' }

function answer(response: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  if (response.headersSent) {
    response.end()
    return
  }
  response.writeHead(status, { ...JSON_HEADERS, ...headers }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }))
}

/** The MCP route of a peer (see the module comment). */
export class McpHttpRoute implements HttpRoute {
  readonly path: string
  private readonly sessions = new Map<string, Session>()
  private readonly counts = { opened: 0, refusedCredentials: 0, refusedOrigin: 0, refusedBusy: 0, unknownSession: 0 }
  private readonly sweeper: ReturnType<typeof setInterval>
  private closed = false

  constructor(
    private readonly peer: Peer,
    private readonly options: McpHttpOptions = {},
  ) {
    this.path = options.path ?? '/mcp'
    const idle = options.idleTimeoutMs ?? 30 * 60_000
    this.sweeper = setInterval(() => this.closeIdle(idle), Math.max(1000, Math.min(60_000, idle / 4)))
    this.sweeper.unref()
  }

  /** Counters. */
  get stats(): Readonly<McpHttpStats> {
    return { sessions: this.sessions.size, ...this.counts }
  }

  handleRequest(request: IncomingMessage, response: ServerResponse): void {
    void this.handle(request, response).catch(() => answer(response, 500, -32603, 'CONCORD_INTERNAL: the request failed'))
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.closed) return answer(response, 503, -32000, 'CONCORD_CLOSED: the peer is closing')
    const origin = request.headers.origin
    if (origin !== undefined && !(this.options.allowedOrigins ?? []).includes(origin)) {
      this.counts.refusedOrigin++
      return answer(response, 403, -32000, 'CONCORD_FORBIDDEN: requests from browser pages of this origin are not accepted')
    }
    const url = new URL(request.url ?? '/', 'http://localhost')
    const claim = readCredentials(request, url)
    const header = request.headers['mcp-session-id']
    const sessionId = typeof header === 'string' ? header : undefined
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId)
    const agent = claim?.peer ?? session?.agent ?? `mcp-${randomBytes(6).toString('hex')}`
    const presented: PresentedCredentials = claim?.token ? { scheme: 'bearer', token: claim.token } : { scheme: 'none' }
    if (!claim || agent === this.peer.agentId || !(await this.peer.admission.authenticate(agent as AgentId, presented))) {
      this.counts.refusedCredentials++
      return answer(response, 401, -32001, 'CONCORD_AUTH_FAILED: credentials refused (Authorization: Bearer <token>, X-Concord-Peer: <agent id>)', {
        'www-authenticate': 'Bearer realm="concord"',
      })
    }
    if (sessionId !== undefined) {
      if (!session || session.agent !== agent) {
        this.counts.unknownSession++
        return answer(response, 404, -32001, 'CONCORD_NOT_FOUND: no such MCP session (initialize a new one)')
      }
      return this.serve(session, request, response)
    }
    if (request.method !== 'POST') return answer(response, 400, -32000, 'CONCORD_INVALID_ARGUMENT: no MCP session: POST an initialize request first')
    if (
      this.sessions.size >= (this.options.maxSessions ?? 256) ||
      [...this.sessions.values()].filter((s) => s.agent === agent).length >= (this.options.maxSessionsPerAgent ?? 16)
    ) {
      this.counts.refusedBusy++
      return answer(response, 503, -32000, 'CONCORD_LIMIT_EXCEEDED: too many MCP sessions; close one (DELETE) or retry later', { 'retry-after': '5' })
    }
    await this.open(agent, request, response)
  }

  /** A new session for `agent`: the transport assigns its id when the request is an initialize. */
  private async open(agent: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const server = new ConcordMcpServer(this.peer, remotePrincipal(this.peer, agent), this.options)
    let session: Session | undefined
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session = { id, agent, transport, server, lastActive: Date.now(), open: 0 }
        this.sessions.set(id, session)
        this.counts.opened++
      },
      onsessionclosed: (id) => void this.drop(id),
    })
    transport.onclose = () => {
      if (session) void this.drop(session.id)
    }
    await server.connect(transport)
    await transport.handleRequest(request, response)
    // Not an initialize request: the transport refused it and no session exists.
    if (!session) await server.close()
  }

  private async serve(session: Session, request: IncomingMessage, response: ServerResponse): Promise<void> {
    session.open++
    session.lastActive = Date.now()
    response.once('close', () => {
      session.open--
      session.lastActive = Date.now()
    })
    await session.transport.handleRequest(request, response)
  }

  private async drop(id: string): Promise<void> {
    const session = this.sessions.get(id)
    if (!session) return
    this.sessions.delete(id)
    await session.server.close()
  }

  private closeIdle(idleMs: number): void {
    const now = Date.now()
    for (const session of [...this.sessions.values()]) {
      if (session.open === 0 && now - session.lastActive >= idleMs) void this.drop(session.id)
    }
  }

  /** Closes every session (the peer calls it before closing its store). */
  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.sweeper)
    await Promise.allSettled([...this.sessions.keys()].map((id) => this.drop(id)))
  }
}

/** The MCP route of `peer`, to serve at `/mcp` on its listener: `peer.listen({ routes: [mcpRoute(peer)] })`. */
export function mcpRoute(peer: Peer, options: McpHttpOptions = {}): McpHttpRoute {
  return new McpHttpRoute(peer, options)
}
