/**
 * The inspector page (served at `/ui` by a peer: inspector/route.ts). It is
 * a `concord-crdt/browser` peer, in memory, that connects back to the serving
 * peer's `/concord` with the page's credentials: the values it shows are
 * its own replicas', live as commits arrive, so it sees what a peer with
 * those credentials sees (a name it may not read never reaches it). What a
 * peer cannot see from its replicas (the serving peer's log, blame, diffs,
 * sessions and durability) comes from the read-only API next to the page.
 * Nothing on the page writes.
 *
 * Credentials come from the address's fragment (`/ui#peer=<id>&token=<secret>`,
 * never sent in a request) or the form shown when the peer asks for them.
 */
import { createPeer, type BrowserPeer, type Replica, type ReplicaType } from '../../browser.ts'
import { ApiError, InspectorClient, type Credentials, type NameRow, type RecordInfo, type StatusInfo } from './api.ts'
import {
  Agents,
  blameView,
  diffView,
  durabilityCard,
  namesList,
  peerRows,
  presenceList,
  prettyJson,
  recordRows,
  timelineChart,
  trafficChart,
} from './render.ts'

const base = location.pathname.replace(/\/+$/, '')
const element = (id: string): HTMLElement => document.getElementById(id)!

interface PageState {
  client?: InspectorClient
  peer?: BrowserPeer
  status?: StatusInfo
  names: NameRow[]
  selected?: string
  records: RecordInfo[]
  /** The two points of the timeline compared (seqs); `follow`: B tracks the newest record. */
  picked: { a?: number; b?: number; follow: boolean }
  blame?: { blame: { kind: string } & Record<string, unknown> }
  traffic: Array<{ t: number; rate: number }>
  lastTotal?: { t: number; bytes: number }
  /** Replicas of this page's peer, by name. */
  replicas: Map<string, Replica>
}

const state: PageState = { names: [], records: [], picked: { follow: true }, traffic: [], replicas: new Map() }
const agents = new Agents()

/** What tests and curious people can reach from the console. */
;(globalThis as { inspector?: unknown }).inspector = { state }

function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6))
  return `ui-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`
}

function credentialsFromFragment(): Credentials {
  const params = new URLSearchParams(location.hash.slice(1))
  return { peer: params.get('peer') || randomId(), token: params.get('token') ?? '' }
}

/** A value as JSON can show it: sets as arrays, maps as objects, bytes by length. */
function plain(value: unknown, depth = 0): unknown {
  if (depth > 64) return '…'
  if (value instanceof Uint8Array) return { bytes: value.byteLength }
  if (value instanceof Set) return [...value].map((item) => plain(item, depth + 1))
  if (value instanceof Map) return Object.fromEntries([...value].map(([key, item]) => [String(key), plain(item, depth + 1)]))
  if (Array.isArray(value)) return value.map((item) => plain(item, depth + 1))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, plain(item, depth + 1)]))
  }
  return value
}

function setConnection(text: string, kind: 'ok' | 'bad' | ''): void {
  const pill = element('connection')
  pill.textContent = text
  pill.className = `pill ${kind}`
}

async function start(credentials: Credentials): Promise<void> {
  const client = new InspectorClient(base, credentials)
  const status = await client.get<StatusInfo>('status')
  state.client = client
  state.status = status
  element('serving').textContent = `peer ${status.agentId} · you are ${credentials.peer}`
  const peer = await createPeer({
    agentId: credentials.peer,
    database: false,
    automerge: { wasm: `${base}/automerge.wasm` },
    auth: credentials.token ? { token: credentials.token } : undefined,
  })
  state.peer = peer
  ;(globalThis as { inspector?: unknown }).inspector = { state, peer, client }
  peer.store.events.on('commit', ({ name }) => changed(name))
  peer.on('peer-connected', () => setConnection('live', 'ok'))
  peer.on('peer-disconnected', () => setConnection('disconnected', 'bad'))
  peer.on('reconnecting', () => setConnection('reconnecting', 'bad'))
  element('login').hidden = true
  element('app').hidden = false
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
  try {
    await peer.connect(`${scheme}://${location.host}/concord`)
    setConnection('live', 'ok')
  } catch (error) {
    setConnection(`not connected: ${(error as Error).message}`, 'bad')
  }
  await Promise.all([refreshStatus(), refreshNames()])
  setInterval(() => void refreshStatus(), 1000)
  setInterval(() => void refreshNames(), 5000)
}

// ------------------------------------------------------------ overview

async function refreshStatus(): Promise<void> {
  if (!state.client) return
  const status = await state.client.get<StatusInfo>('status').catch(() => undefined)
  if (!status) return
  state.status = status
  const total = status.sessions.reduce((sum, s) => sum + s.bytesIn + s.bytesOut, 0)
  if (state.lastTotal && status.now > state.lastTotal.t) {
    const rate = Math.max(0, ((total - state.lastTotal.bytes) * 1000) / (status.now - state.lastTotal.t))
    state.traffic.push({ t: status.now, rate })
    if (state.traffic.length > 120) state.traffic.shift()
  }
  state.lastTotal = { t: status.now, bytes: total }
  element('durability').innerHTML = durabilityCard(status)
  element('peers').querySelector('tbody')!.innerHTML = peerRows(status.sessions, agents, status.now)
  element('traffic').innerHTML = trafficChart(state.traffic)
  element('presence').innerHTML = presenceList(status.presence ?? [], agents, status.now)
}

async function refreshNames(): Promise<void> {
  if (!state.client) return
  const answer = await state.client.get<{ names: NameRow[] }>('names').catch(() => undefined)
  if (!answer) return
  state.names = answer.names
  agents.see(...answer.names.map((n) => n.lastAgent))
  element('names').innerHTML = namesList(answer.names, state.selected, agents, state.status?.now ?? Date.now())
}

// ------------------------------------------------------------ live updates

const pending = new Set<string>()
let flushTimer: ReturnType<typeof setTimeout> | undefined

/** A commit reached this page's peer: refresh what shows it, once per burst. */
function changed(name: string): void {
  pending.add(name)
  if (name === state.selected) renderValue()
  if (flushTimer !== undefined) return
  flushTimer = setTimeout(() => {
    flushTimer = undefined
    const names = [...pending]
    pending.clear()
    void refreshNames()
    if (state.selected !== undefined && names.includes(state.selected)) void loadRecords()
  }, 150)
}

// ------------------------------------------------------------ one name

async function select(name: string): Promise<void> {
  state.selected = name
  state.picked = { follow: true }
  state.records = []
  state.blame = undefined
  for (const li of element('names').querySelectorAll('li')) li.classList.toggle('selected', li.dataset.name === name)
  const row = state.names.find((n) => n.name === name)
  element('detail').innerHTML =
    `<h2 id="detail-name"></h2><p class="muted" id="detail-type"></p>` +
    `<h3>Value <span class="muted">(this page's replica, live)</span></h3><div id="value"></div>` +
    `<div id="blame"></div>` +
    `<h3>Timeline</h3><div id="timeline-chart-box"></div>` +
    `<table id="timeline"><thead><tr><th>record</th><th>agent</th><th>HLC time</th><th>message</th><th>size</th><th>kind</th><th>pick</th></tr></thead><tbody></tbody></table>` +
    `<div class="columns"><div><h3 id="at-title">Value at B</h3><div id="at-value"></div></div><div><h3 id="diff-title">Diff A → B</h3><div id="diff"></div></div></div>`
  element('detail-name').textContent = name
  element('detail-type').textContent = row ? `${row.type} · ${row.records} records · newest #${row.lastSeq}` : ''
  if (row && state.peer && !state.replicas.has(name)) {
    const replica = await state.peer.open(name, row.type as ReplicaType).catch(() => undefined)
    if (replica) state.replicas.set(name, replica)
  }
  renderValue()
  await loadRecords()
}

function renderValue(): void {
  const name = state.selected
  const box = document.getElementById('value')
  if (name === undefined || !box) return
  const replica = state.replicas.get(name)
  box.innerHTML = replica ? prettyJson(plain(replica.value())) : '<p class="muted">not on this page\'s peer yet</p>'
}

async function loadRecords(): Promise<void> {
  const name = state.selected
  if (name === undefined || !state.client) return
  const [history, blame] = await Promise.all([
    state.client.get<{ records: RecordInfo[] }>('history', { name, limit: 200 }).catch(() => undefined),
    state.client.get<{ blame: { kind: string } & Record<string, unknown> }>('blame', { name }).catch(() => undefined),
  ])
  if (name !== state.selected || !history) return
  state.records = history.records
  state.blame = blame
  agents.see(...history.records.map((r) => r.agent))
  const seqs = history.records.map((r) => r.seq)
  if (state.picked.follow || state.picked.b === undefined) {
    state.picked.b = seqs.at(-1) ?? 0
    state.picked.a = seqs.at(-2) ?? 0
  }
  element('blame').innerHTML = blameView(blame, agents)
  renderTimeline()
  await loadPoints()
}

function renderTimeline(): void {
  element('timeline-chart-box').innerHTML = timelineChart(state.records, agents)
  element('timeline').querySelector('tbody')!.innerHTML = recordRows(state.records, state.picked, agents)
}

async function loadPoints(): Promise<void> {
  const name = state.selected
  const { a, b } = state.picked
  if (name === undefined || !state.client || a === undefined || b === undefined) return
  const [at, diff] = await Promise.all([
    state.client.get<{ value: unknown }>('at', { name, seq: b }).catch((error: unknown) => error as Error),
    state.client.get<{ changes: { kind: string } & Record<string, unknown> }>('diff', { name, from: a, to: b }).catch((error: unknown) => error as Error),
  ])
  if (name !== state.selected) return
  element('at-title').textContent = `Value at #${b}`
  element('diff-title').textContent = `Diff #${a} → #${b}`
  element('at-value').innerHTML = at instanceof Error ? `<p class="error">${at.message}</p>` : prettyJson(at.value)
  element('diff').innerHTML = diff instanceof Error ? `<p class="error">${diff.message}</p>` : diffView(diff.changes)
}

// ------------------------------------------------------------ wiring

function wire(): void {
  element('names').addEventListener('click', (event) => {
    const li = (event.target as HTMLElement).closest('li[data-name]') as HTMLElement | null
    if (li?.dataset.name !== undefined) void select(li.dataset.name)
  })
  element('detail').addEventListener('click', (event) => {
    const target = event.target as Element
    const button = target.closest('button.pick') as HTMLElement | null
    const dot = target.closest('circle[data-seq]') as SVGElement | null
    const seq = Number(button?.dataset.seq ?? dot?.dataset.seq)
    if (!Number.isInteger(seq)) return
    if (button?.dataset.pick === 'a') state.picked.a = seq
    else state.picked.b = seq
    state.picked.follow = false
    renderTimeline()
    void loadPoints()
  })
  const form = element('login') as HTMLFormElement
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const data = new FormData(form)
    const credentials = { peer: String(data.get('peer') ?? ''), token: String(data.get('token') ?? '') }
    history.replaceState(null, '', `#${new URLSearchParams({ peer: credentials.peer, ...(credentials.token ? { token: credentials.token } : {}) })}`)
    void boot(credentials)
  })
}

async function boot(credentials: Credentials): Promise<void> {
  try {
    await start(credentials)
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      element('login').hidden = false
      element('login-error').textContent = location.hash.includes('peer=') ? 'Those credentials were refused.' : ''
      setConnection('credentials needed', 'bad')
      return
    }
    setConnection(`failed: ${(error as Error).message}`, 'bad')
  }
}

wire()
void boot(credentialsFromFragment())
