/**
 * The page's views, as HTML strings (every text escaped): a value as
 * pretty JSON, a Yjs text coloured by who wrote each span (blame), the
 * blame of other kinds, a diff, the timeline of a name's records (a lane
 * chart per agent, from the shared charts, and a table), and the peers.
 */
import { colorOf, escapeXml, laneChartSvg, lineChartSvg, ticksEvery, type XAxis } from '../charts.ts'
import type { NameRow, RecordInfo, SessionRow, StatusInfo } from './api.ts'

/** The agents seen so far, in the order first seen: their colours stay put as more come. */
export class Agents {
  private readonly known: string[] = []

  /** Notes `agents` (in order), returns nothing. */
  see(...agents: ReadonlyArray<string | null | undefined>): void {
    for (const agent of agents) if (agent && !this.known.includes(agent)) this.known.push(agent)
  }

  color(agent: string): string {
    this.see(agent)
    return colorOf(agent, this.known)
  }

  /** A coloured dot and the agent's id. */
  tag(agent: string | null): string {
    if (agent === null) return '<span class="muted">older records</span>'
    return `<span class="agent" style="background:${this.color(agent)}"></span>${escapeXml(agent)}`
  }
}

/** Bytes, human-readable. */
export function bytes(count: number): string {
  if (count >= 1024 * 1024) return `${(count / 1024 / 1024).toFixed(1)} MiB`
  if (count >= 1024) return `${(count / 1024).toFixed(1)} KiB`
  return `${count} B`
}

/** How long ago `at` was, from `now`. */
export function ago(at: number | null, now: number): string {
  if (at === null) return 'never'
  const seconds = Math.max(0, Math.round((now - at) / 1000))
  if (seconds < 60) return `${seconds} s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`
  return `${Math.round(seconds / 3600)} h ago`
}

/** A JSON value, pretty. */
export function prettyJson(value: unknown): string {
  return `<pre class="json">${escapeXml(JSON.stringify(value, null, 2) ?? 'undefined')}</pre>`
}

/** The names list. */
export function namesList(names: readonly NameRow[], selected: string | undefined, agents: Agents, now: number): string {
  if (names.length === 0) return '<li class="muted">No name yet.</li>'
  return names
    .map((row) => {
      const who = row.lastAgent === null ? '' : ` by ${agents.tag(row.lastAgent)}`
      const why = row.lastMessage === null ? '' : ` <span class="why">“${escapeXml(row.lastMessage)}”</span>`
      return (
        `<li data-name="${escapeXml(row.name)}"${row.name === selected ? ' class="selected"' : ''}>` +
        `<div class="name">${escapeXml(row.name)}</div>` +
        `<div class="meta">${escapeXml(row.type)} · ${bytes(row.size)} · ${row.records} records · ${ago(row.lastChange, now)}${who}${why}</div></li>`
      )
    })
    .join('')
}

/** The durability card. */
export function durabilityCard(status: StatusInfo): string {
  const d = status.durability
  const mode = d.mode === 'async' ? `async (fsync within ${d.rpoMs} ms)` : 'sync (each write fsynced)'
  const last = d.lastFsyncAt === null ? 'none since the peer started' : `${ago(d.lastFsyncAt, status.now)} (${new Date(d.lastFsyncAt).toLocaleTimeString()})`
  return (
    `<h2>Durability</h2><div>Mode: <b id="durability-mode">${escapeXml(mode)}</b></div>` +
    `<div>Last fsync: <span id="last-fsync">${escapeXml(last)}</span></div>` +
    `<div class="muted">${d.fsyncs} fsyncs of ${d.batches} batches</div>`
  )
}

/** The peers table's rows. */
export function peerRows(sessions: readonly SessionRow[], agents: Agents, now: number): string {
  if (sessions.length === 0) return '<tr><td colspan="9" class="muted">No peer connected.</td></tr>'
  return sessions
    .map((s) => {
      const state = s.state === 'open' ? (s.synced ? 'synced' : 'syncing') : s.state
      return (
        `<tr data-peer="${escapeXml(s.agentId ?? '')}"><td>${s.agentId === null ? '<span class="muted">(handshake)</span>' : agents.tag(s.agentId)}</td>` +
        `<td>${escapeXml(state)}</td><td>${s.lag.commits}</td><td>${bytes(s.lag.bytes)}</td><td>${escapeXml(ago(s.lastAckAt, now))}</td>` +
        `<td>${s.refusedWrites}</td><td>${s.rejectedByRemote}</td><td>${s.malformed}</td><td>${bytes(s.bytesIn)} / ${bytes(s.bytesOut)}</td></tr>`
      )
    })
    .join('')
}

/** The serving peer's traffic over the last samples (bytes in and out per second), a line chart. */
export function trafficChart(samples: ReadonlyArray<{ readonly t: number; readonly rate: number }>): string {
  if (samples.length < 2) return ''
  const t0 = samples[0].t
  const span = Math.max(1000, samples.at(-1)!.t - t0)
  const step = span > 60_000 ? 30_000 : span > 10_000 ? 5000 : 1000
  const axis: XAxis = { min: 0, max: span, ticks: ticksEvery(span % step, span, step, (at) => (at === span ? 'now' : `${Math.round((at - span) / 1000)} s`)) }
  const max = Math.max(1024, ...samples.map((s) => s.rate))
  return lineChartSvg({
    id: 'traffic-chart',
    label: 'bytes per second exchanged by the serving peer',
    width: 720,
    height: 120,
    left: 70,
    x: axis,
    yMax: max,
    yTicks: 2,
    yUnit: (value) => `${bytes(Math.round(value))}/s`,
    series: [{ values: samples.map((s): [number, number] => [s.t - t0, s.rate]), color: '#4e79a7', label: 'bytes/s' }],
  })
}

/** The timeline of a name: one lane per agent, a dot per record (a record's seq in `data-seq`). */
export function timelineChart(records: readonly RecordInfo[], agents: Agents): string {
  if (records.length === 0) return ''
  const lanes = [...new Set(records.map((r) => r.agent))]
  const min = records[0].wall
  const max = Math.max(min + 1000, records.at(-1)!.wall)
  const span = max - min
  const step = span > 3_600_000 ? 600_000 : span > 600_000 ? 120_000 : span > 60_000 ? 10_000 : span > 10_000 ? 2000 : 1000
  const axis: XAxis = { min, max, ticks: ticksEvery(min, max, step, (at) => new Date(at).toLocaleTimeString()) }
  return laneChartSvg({
    id: 'timeline-chart',
    label: 'records of this name over time, by agent',
    width: 900,
    left: 120,
    x: axis,
    lanes,
    marks: records.map((r) => ({
      lane: lanes.indexOf(r.agent),
      at: r.wall,
      color: agents.color(r.agent),
      title: `#${r.seq} by ${r.agent}, ${bytes(r.size)}${r.message ? `: ${r.message}` : ''}`,
      radius: Math.max(3, Math.min(9, 3 + Math.log2(1 + r.size / 64))),
      data: { seq: String(r.seq) },
    })),
  })
}

/** The records table, newest first, with the two picked points. */
export function recordRows(records: readonly RecordInfo[], picked: { a?: number; b?: number }, agents: Agents): string {
  return [...records]
    .reverse()
    .map((r) => {
      const cls = r.seq === picked.a ? ' class="picked-a"' : r.seq === picked.b ? ' class="picked-b"' : ''
      const time = `${new Date(r.wall).toISOString().replace('T', ' ').replace('Z', '')}${r.counter > 0 ? `.${r.counter}` : ''}`
      return (
        `<tr data-seq="${r.seq}" data-agent="${escapeXml(r.agent)}"${cls}><td>#${r.seq}</td><td>${agents.tag(r.agent)}</td><td>${escapeXml(time)}</td>` +
        `<td>${r.message === null ? '<span class="muted">—</span>' : escapeXml(r.message)}${r.meta ? ` <span class="muted">${escapeXml(JSON.stringify(r.meta))}</span>` : ''}</td><td>${bytes(r.size)}</td><td>${r.kind}</td>` +
        `<td><button class="link pick" data-pick="a" data-seq="${r.seq}">A</button> <button class="link pick" data-pick="b" data-seq="${r.seq}">B</button></td></tr>`
      )
    })
    .join('')
}

interface Span {
  readonly text: string
  readonly agent: string | null
  readonly seq?: number
  readonly at?: string
}

/** A blame report (mcp/blame.ts's shape): a text coloured by agent, or a table of who set what. */
export function blameView(report: { blame: { kind: string } & Record<string, unknown> } | undefined, agents: Agents): string {
  if (report === undefined) return ''
  const blame = report.blame
  if (blame.kind === 'text') {
    const spans = blame.spans as Span[]
    agents.see(...spans.map((s) => s.agent))
    const text = spans
      .map((s) =>
        s.agent === null
          ? `<span class="blamed" style="border-color:#ccc" title="older than the records kept">${escapeXml(s.text)}</span>`
          : `<span class="blamed" data-agent="${escapeXml(s.agent)}" style="border-color:${agents.color(s.agent)}" title="${escapeXml(`${s.agent}, #${s.seq}, ${s.at}`)}">${escapeXml(s.text)}</span>`,
      )
      .join('')
    const who = [...new Set(spans.map((s) => s.agent).filter((a): a is string => a !== null))]
    return `<h3>Text by author (field ${escapeXml(String(blame.field))})</h3><pre id="blame-text">${text}</pre><div class="legend">${who.map((a) => `<span>${agents.tag(a)}</span>`).join('')}</div>`
  }
  if (blame.kind === 'counter') {
    const rows = (blame.contributions as Array<{ agent: string; amount: number; records: number }>)
      .map((c) => `<tr data-agent="${escapeXml(c.agent)}"><td>${agents.tag(c.agent)}</td><td>${c.amount}</td><td>${c.records}</td></tr>`)
      .join('')
    return `<h3>Who counted what</h3><table id="blame-table"><tr><th>agent</th><th>amount</th><th>records</th></tr>${rows}</table>`
  }
  const items = (blame.kind === 'set' ? blame.elements : blame.paths) as Array<{ element?: unknown; path?: string; agent: string | null; seq?: number }>
  const rows = items
    .slice(0, 500)
    .map(
      (item) =>
        `<tr data-agent="${escapeXml(item.agent ?? '')}"><td><code>${escapeXml(blame.kind === 'set' ? JSON.stringify(item.element) : (item.path ?? ''))}</code></td><td>${agents.tag(item.agent)}</td><td>${item.seq === undefined ? '' : `#${item.seq}`}</td></tr>`,
    )
    .join('')
  return `<h3>Who set what</h3><table id="blame-table"><tr><th>${blame.kind === 'set' ? 'element' : 'path'}</th><th>agent</th><th>record</th></tr>${rows}</table>`
}

/** A diff (mcp/diff.ts's `Changes`), readable. */
export function diffView(changes: { kind: string } & Record<string, unknown>): string {
  switch (changes.kind) {
    case 'counter':
      return `<p>${changes.from} → ${changes.to} (${Number(changes.delta) >= 0 ? '+' : ''}${changes.delta})</p>`
    case 'set':
      return (
        `<p>${(changes.added as unknown[]).map((v) => `<ins>+ ${escapeXml(JSON.stringify(v))}</ins>`).join(' ')} ` +
        `${(changes.removed as unknown[]).map((v) => `<del>− ${escapeXml(JSON.stringify(v))}</del>`).join(' ')}</p>`
      )
    case 'value':
      return `<div class="columns"><div><del>${prettyJson(changes.from)}</del></div><div><ins>${prettyJson(changes.to)}</ins></div></div>`
    case 'json':
      return patchView(changes.patch as Array<Record<string, unknown>>)
    case 'document':
      return (
        changes.fields as Array<{
          field: string
          kind: string
          spans?: Array<{ op: string; at: number; text: string }>
          patch?: Array<Record<string, unknown>>
        }>
      )
        .map((field) => {
          if (field.kind === 'text') {
            const spans = (field.spans ?? [])
              .map((s) => (s.op === 'insert' ? `<ins>${escapeXml(s.text)}</ins>` : `<del>${escapeXml(s.text)}</del>`))
              .join(' … ')
            return `<h4>${escapeXml(field.field)}</h4><pre class="diff">${spans || '<span class="muted">no change</span>'}</pre>`
          }
          return `<h4>${escapeXml(field.field)}</h4>${patchView(field.patch ?? [])}`
        })
        .join('')
    default:
      return prettyJson(changes)
  }
}

function patchView(patch: Array<Record<string, unknown>>): string {
  if (patch.length === 0) return '<p class="muted">no change</p>'
  const rows = patch
    .map((op) => {
      const value = op.value === undefined ? '' : escapeXml(JSON.stringify(op.value))
      const line = `${escapeXml(String(op.op))} <code>${escapeXml(String(op.path))}</code> ${value}`
      return op.op === 'remove' ? `<div><del>${line}</del></div>` : `<div><ins>${line}</ins></div>`
    })
    .join('')
  return `<div class="diff">${rows}</div>`
}

/** Who says it works on what (presence), one line each. */
export function presenceList(entries: StatusInfo['presence'], agents: Agents, now: number): string {
  if (entries.length === 0) return ''
  const rows = entries
    .map((entry) => {
      const status = typeof entry.status === 'string' ? entry.status : JSON.stringify(entry.status)
      const on = entry.name === undefined ? '' : ` on <b>${escapeXml(entry.name)}</b>`
      const left = Math.max(0, Math.round((entry.expiresAt - now) / 1000))
      return `<li data-agent="${escapeXml(entry.agent)}">${agents.tag(entry.agent)}${on}: ${escapeXml(status)} <span class="muted">(via ${escapeXml(entry.peer)}, ${left} s left)</span></li>`
    })
    .join('')
  return `<h3>Presence</h3><ul id="presence-list">${rows}</ul>`
}
