/**
 * The inspector at `/ui` on a peer's listener (`peer.listen({ ui: true })`,
 * `concord serve --ui`): a page that is itself a browser peer (the
 * `concord-crdt/browser` build, bundled), connecting back to this peer's
 * `/concord` with the credentials it is given, so what it shows is what a
 * peer with those credentials sees; and, under `/ui/api/`, a read-only
 * JSON API for what a peer cannot see from its replicas (the log, blame,
 * diffs, sessions, durability: inspector/api.ts).
 *
 * The page and its files are public (they hold no data). An API request is
 * admitted like every door of the peer: a bearer token (`Authorization:
 * Bearer`) and the agent id it claims (`X-Concord-Peer`; none: a generated
 * `ui-<12 hex>`), checked by the peer's `auth.accept` (refused: 401); then
 * each name by the peer's access rules (a name it may not read is answered
 * as absent). Only GET and HEAD are served (405 otherwise), and a request
 * from a page of another origin is refused (403). Everything the page
 * loads is served here: no CDN, no other host.
 */
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ErrorCodes } from '../crdt/errors.ts'
import { readCredentials } from '../peer/http-credentials.ts'
import type { HttpRoute } from '../peer/websocket-network.ts'
import type { AgentId, PresentedCredentials } from '../sync/index.ts'
import { InspectorApi, type InspectedPeer } from './api.ts'
import { automergeWasm, inspectorBundle } from './assets.ts'
import { INSPECTOR_CSS, inspectorHtml } from './page-html.ts'

/** Options of {@link inspectorRoute}. */
export interface InspectorOptions {
  /** Mount point (default `/ui`). */
  readonly path?: string | undefined
}

/** Counters of the inspector route. */
export interface InspectorStats {
  requests: number
  apiRequests: number
  refusedCredentials: number
  refusedOrigin: number
  refusedMethod: number
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
}
/** The page may load and connect only to this peer (and compile Automerge's wasm). */
const CSP =
  "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/** The inspector route of a peer (see the module comment). */
export class InspectorRoute implements HttpRoute {
  readonly path: string
  private readonly api: InspectorApi
  private readonly counts: InspectorStats = { requests: 0, apiRequests: 0, refusedCredentials: 0, refusedOrigin: 0, refusedMethod: 0 }
  private closed = false

  constructor(
    private readonly peer: InspectedPeer,
    options: InspectorOptions = {},
  ) {
    this.path = (options.path ?? '/ui').replace(/\/+$/, '') || '/ui'
    this.api = new InspectorApi(peer)
  }

  /** Counters. */
  get stats(): Readonly<InspectorStats> {
    return { ...this.counts }
  }

  handleRequest(request: IncomingMessage, response: ServerResponse): void {
    this.counts.requests++
    void this.handle(request, response).catch(() => json(response, 500, { error: { code: null, message: 'the request failed' } }))
  }

  close(): void {
    this.closed = true
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.closed) return json(response, 503, { error: { code: ErrorCodes.CLOSED, message: 'the peer is closing' } })
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      this.counts.refusedMethod++
      return json(response, 405, { error: { code: ErrorCodes.FORBIDDEN, message: 'the inspector is read-only: GET only' } }, { allow: 'GET, HEAD' })
    }
    const url = new URL(request.url ?? '/', 'http://localhost')
    const rest = url.pathname.slice(this.path.length)
    if (rest === '' || rest === '/') return send(response, 200, 'text/html; charset=utf-8', inspectorHtml(this.path), { 'content-security-policy': CSP })
    if (rest === '/inspector.js') return send(response, 200, 'text/javascript; charset=utf-8', await inspectorBundle())
    if (rest === '/inspector.css') return send(response, 200, 'text/css; charset=utf-8', INSPECTOR_CSS)
    if (rest === '/automerge.wasm') return send(response, 200, 'application/wasm', await automergeWasm(), { 'cache-control': 'max-age=3600' })
    if (!rest.startsWith('/api/')) return json(response, 404, { error: { code: ErrorCodes.NOT_FOUND, message: 'not found' } })
    this.counts.apiRequests++
    if (!sameOrigin(request)) {
      this.counts.refusedOrigin++
      return json(response, 403, { error: { code: ErrorCodes.FORBIDDEN, message: 'requests from pages of another origin are not accepted' } })
    }
    const claim = readCredentials(request, new URL('http://localhost/'))
    const agent = claim?.peer ?? `ui-${randomBytes(6).toString('hex')}`
    const presented: PresentedCredentials = claim?.token ? { scheme: 'bearer', token: claim.token } : { scheme: 'none' }
    if (!claim || agent === this.peer.agentId || !(await this.peer.admission.authenticate(agent as AgentId, presented))) {
      this.counts.refusedCredentials++
      return json(
        response,
        401,
        { error: { code: ErrorCodes.AUTH_FAILED, message: 'credentials refused (Authorization: Bearer <token>, X-Concord-Peer: <agent id>)' } },
        { 'www-authenticate': 'Bearer realm="concord"' },
      )
    }
    const answer = await this.api.answer(rest.slice('/api/'.length), url.searchParams, agent)
    return json(response, answer.status, answer.body)
  }
}

/** The inspector route of `peer`: `peer.listen({ routes: [inspectorRoute(peer)] })` (what `listen({ ui: true })` does). */
export function inspectorRoute(peer: InspectedPeer, options: InspectorOptions = {}): InspectorRoute {
  return new InspectorRoute(peer, options)
}

/** No `Origin` (a same-origin GET sends none), or the origin of the host the request was sent to. */
function sameOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin
  if (origin === undefined) return true
  const host = request.headers.host
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`)
}

function send(response: ServerResponse, status: number, type: string, body: string | Uint8Array, headers: Record<string, string> = {}): void {
  if (response.headersSent) return void response.end()
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': String(bytes.byteLength), ...headers })
  response.end(response.req.method === 'HEAD' ? undefined : bytes)
}

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body), headers)
}
