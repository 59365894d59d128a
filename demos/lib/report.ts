/**
 * The HTML report of a partition scenario: one self-contained file (inline
 * CSS and SVG, no script, no external asset) with the timeline of
 * partitions, kills and restarts, the divergence (number of distinct states
 * among live agents) over time, and the bytes sent over time. The charts
 * are the inspector's (inspector/charts.ts).
 */
import { PALETTE, axisSvg, escapeXml, lineChartSvg, scaleX as chartScaleX, secondTicks, type XAxis } from '../../inspector/charts.ts'
import { peakDivergence, type ScenarioResult } from './partition-scenario.ts'

const WIDTH = 960
const LEFT = 110
const RIGHT = 20
const escapeHtml = escapeXml

/** The time axis of a run: its whole span, in seconds. */
function timeAxisOf(result: ScenarioResult): XAxis {
  return { min: 0, max: Math.max(1, result.durationMs), ticks: secondTicks(result.durationMs) }
}

function scaleX(result: ScenarioResult): (t: number) => number {
  return chartScaleX(timeAxisOf(result))
}

function timeAxis(result: ScenarioResult, y: number): string {
  return axisSvg(timeAxisOf(result), y)
}

/** Approximate width of a phase label in px (11 px system-ui). */
const labelWidth = (text: string) => text.length * 6.2 + 4

/** Where each phase label goes: in its band when it fits, else on an extra row above, never cut by the edges nor overlapping. */
export function placePhaseLabels(result: ScenarioResult): { rows: number; labels: Array<{ x: number; row: number; text: string; inside: boolean }> } {
  const x = scaleX(result)
  const taken: Array<Array<[number, number]>> = [[]]
  const labels = result.phases.map((phase, p) => {
    const x0 = x(phase.start)
    const x1 = x(phase.end)
    const text = phase.label
    const width = labelWidth(text)
    if (width < x1 - x0) {
      taken[0].push([x0, x1])
      return { x: (x0 + x1) / 2, row: 0, text, inside: true }
    }
    const center = Math.min(WIDTH - RIGHT - width / 2, Math.max(LEFT + width / 2, (x0 + x1) / 2))
    const span: [number, number] = [center - width / 2, center + width / 2]
    let row = 1
    while ((taken[row] ?? []).some(([a, b]) => span[0] < b + 6 && a - 6 < span[1])) row++
    ;(taken[row] ??= []).push(span)
    return { x: center, row, text: `${p + 1}. ${text}`, inside: false }
  })
  return { rows: taken.length, labels }
}

/** The timeline: one row per agent, colored by its side of the partition in each phase; kills and restarts marked. */
export function timelineSvg(result: ScenarioResult): string {
  const x = scaleX(result)
  const row = 28
  const placed = placePhaseLabels(result)
  const extra = (placed.rows - 1) * 14
  const top = 36 + extra
  const height = top + result.agents.length * row + 30
  const parts: string[] = []
  for (const [p, phase] of result.phases.entries()) {
    const x0 = x(phase.start)
    const x1 = x(phase.end)
    parts.push(
      `<rect x="${x0.toFixed(1)}" y="${4 + extra}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${height - 34 - extra}" fill="${p % 2 === 0 ? '#f7f7f7' : '#ffffff'}"/>`,
    )
    // The label in its band when it fits; else above the bands (numbered as in the table below), with a tick to its band.
    const label = placed.labels[p]
    const y = label.inside ? 20 + extra : 14 * label.row
    if (!label.inside) parts.push(`<line x1="${((x0 + x1) / 2).toFixed(1)}" y1="${y + 3}" x2="${((x0 + x1) / 2).toFixed(1)}" y2="${4 + extra}" stroke="#999"/>`)
    parts.push(
      `<text x="${label.x.toFixed(1)}" y="${y}" text-anchor="middle" class="phase">${escapeHtml(label.text)}<title>${escapeHtml(`${p + 1}. ${phase.label}`)}</title></text>`,
    )
    for (const [a, agent] of result.agents.entries()) {
      const group = phase.groups.findIndex((g) => g.includes(agent))
      const color = PALETTE[(group < 0 ? a : group) % PALETTE.length]
      parts.push(
        `<rect x="${x0.toFixed(1)}" y="${top + a * row + 4}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${row - 10}" fill="${color}" opacity="0.85"><title>${escapeHtml(`${agent}: side ${group + 1} of ${phase.groups.length} in "${phase.label}"`)}</title></rect>`,
      )
    }
  }
  for (const [a, agent] of result.agents.entries()) {
    parts.push(`<text x="${LEFT - 8}" y="${top + a * row + 18}" text-anchor="end" class="label">${escapeHtml(agent)}</text>`)
    // Down time: from a kill to the next restart.
    const mine = result.events.filter((e) => e.agent === agent)
    for (const [i, event] of mine.entries()) {
      if (event.kind !== 'kill') continue
      const back = mine.slice(i + 1).find((e) => e.kind === 'restart')
      const x0 = x(event.t)
      const x1 = x(back?.t ?? result.durationMs)
      parts.push(
        `<rect x="${x0.toFixed(1)}" y="${top + a * row + 4}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${row - 10}" fill="url(#down)"><title>${escapeHtml(`${agent} down (SIGKILL)`)}</title></rect>`,
      )
    }
    for (const event of mine) {
      const cx = x(event.t).toFixed(1)
      const cy = top + a * row + 13
      parts.push(
        event.kind === 'kill'
          ? `<text x="${cx}" y="${cy + 5}" text-anchor="middle" class="mark kill">✕<title>${escapeHtml(event.note)}</title></text>`
          : `<text x="${cx}" y="${cy + 5}" text-anchor="middle" class="mark restart">↻<title>${escapeHtml(event.note)}</title></text>`,
      )
    }
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" id="timeline" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="timeline of partitions">` +
    `<defs><pattern id="down" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ddd"/><line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="3"/></pattern></defs>` +
    parts.join('') +
    timeAxis(result, height - 26) +
    `</svg>`
  )
}

function lineChart(
  result: ScenarioResult,
  id: string,
  label: string,
  values: Array<[number, number]>,
  options: { step: boolean; max: number; unit: (v: number) => string; color: string },
): string {
  return lineChartSvg({
    id,
    label,
    x: timeAxisOf(result),
    yMax: options.max,
    yTicks: options.step ? Math.min(options.max, 8) : 4,
    yUnit: options.unit,
    series: [{ values, color: options.color, step: options.step }],
    guides: result.phases.map((phase) => phase.start),
  })
}

/**
 * Divergence: distinct states among live agents over time (a step chart).
 * Connected phases are hatched (there a value above 1 is writes in flight);
 * each partitioned phase is marked with the states left once its sides settled.
 */
export function divergenceSvg(result: ScenarioResult): string {
  const values = result.samples.map((s): [number, number] => [s.t, s.distinct])
  const max = Math.max(2, result.agents.length)
  const x = scaleX(result)
  const top = 14
  const bottom = 220 - 30
  const y = (v: number) => bottom - (v / max) * (bottom - top)
  const overlay: string[] = []
  for (const phase of result.phases) {
    const x0 = x(phase.start)
    const x1 = x(phase.end)
    if (phase.groups.length === 1) {
      overlay.push(
        `<rect x="${x0.toFixed(1)}" y="${top}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${bottom - top}" fill="url(#inflight)" opacity="0.5"><title>${escapeHtml(`"${phase.label}": connected; more than 1 state means writes (or the resync after a heal) still in flight`)}</title></rect>`,
      )
    } else {
      overlay.push(
        `<circle cx="${x1.toFixed(1)}" cy="${y(phase.settledDistinct).toFixed(1)}" r="4" fill="#e15759" stroke="#fff"><title>${escapeHtml(`"${phase.label}": ${phase.settledDistinct} distinct state(s) once each of its ${phase.groups.length} sides had settled`)}</title></circle>`,
      )
    }
  }
  const chart = lineChart(result, 'divergence', 'number of distinct states over time', values, {
    step: true,
    max,
    unit: (v) => String(Math.round(v)),
    color: '#e15759',
  })
  const defs = `<defs><pattern id="inflight" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#ccc" stroke-width="2"/></pattern></defs>`
  // The overlay goes under the line: after the grid, before the polyline.
  return chart.replace(/(role="img" aria-label="[^"]*">)/, `$1${defs}${overlay.join('')}`)
}

/** Bytes sent by all agents, cumulative, over time. */
export function bytesSvg(result: ScenarioResult): string {
  const values = result.samples.map((s): [number, number] => [s.t, s.bytes])
  const max = Math.max(1024, ...values.map(([, v]) => v))
  return lineChart(result, 'bytes', 'bytes exchanged over time', values, {
    step: false,
    max,
    unit: (v) => (v >= 1024 * 1024 ? `${(v / 1024 / 1024).toFixed(1)} MB` : `${(v / 1024).toFixed(0)} KB`),
    color: '#4e79a7',
  })
}

function divergenceSummary(result: ScenarioResult): string {
  const peak = peakDivergence(result)
  if (result.phases.every((p) => p.groups.length === 1)) return 'there was no partition'
  return `up to ${peak.settled} while partitioned (${peak.partitioned} at most at any moment while partitioned, ${peak.connected} in connected phases)`
}

/** The whole report as one HTML document. */
export function renderReport(result: ScenarioResult, title: string, intro: string): string {
  const pass = result.checks.every((c) => c.ok)
  const phaseRows = result.phases
    .map(
      (p, i) =>
        `<tr><td>${i + 1}. ${escapeHtml(p.label)}</td><td>${escapeHtml(p.groups.map((g) => `{${g.join(', ')}}`).join(' | '))}</td><td>${(p.start / 1000).toFixed(2)}–${(p.end / 1000).toFixed(2)} s</td><td>${p.acked}</td><td>${p.settled ? 'yes' : 'no'}</td><td>${p.settledDistinct}</td></tr>`,
    )
    .join('')
  const agentRows = result.agents
    .map((a) => `<tr><td>${escapeHtml(a)}</td><td>${result.ackedBy[a] ?? 0}</td><td><code>${escapeHtml(result.finalDigests[a] ?? '-')}</code></td></tr>`)
    .join('')
  const eventRows = result.events.map((e) => `<li>${(e.t / 1000).toFixed(2)} s — ${escapeHtml(e.note)}</li>`).join('')
  const checkRows = result.checks.map((c) => `<li class="${c.ok ? 'ok' : 'fail'}">${c.ok ? '✔' : '✘'} ${escapeHtml(c.what)}</li>`).join('')
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1000px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; }
.verdict { font-size: 18px; font-weight: 600; } .pass { color: #2e7d32; } .failv { color: #c62828; }
li.ok { color: #2e7d32; } li.fail { color: #c62828; }
svg { display: block; margin: 8px 0; } .tick { font-size: 11px; fill: #555; } .label { font-size: 12px; fill: #222; }
.phase { font-size: 11px; fill: #333; } .mark { font-size: 16px; font-weight: 700; } .kill { fill: #c62828; } .restart { fill: #2e7d32; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(intro)}</p>
<p class="verdict ${pass ? 'pass' : 'failv'}">Verdict: ${pass ? 'PASS' : 'FAIL'}</p>
<ul>${checkRows}</ul>
<p>${result.agents.length} agents, ${result.ackedTotal} acknowledged writes, ${result.finalFacts} facts in the final state, ${(result.bytesTotal / 1024).toFixed(1)} KB sent. The schedule (every phase and the final heal, the span of the charts) took ${(result.durationMs / 1000).toFixed(1)} s; the total the demo prints also counts starting and stopping the agent processes.</p>
<h2>Timeline of partitions</h2>
<p>Each row is an agent; in each phase its color is its side of the partition (same color = can reach each other). Hatched: down after a SIGKILL. ✕ kill, ↻ restart from its LevelDB folder.</p>
${timelineSvg(result)}
<h2>Divergence: distinct states among live agents</h2>
<p>1 means every live agent holds the same state. Dashed lines mark phase starts. In connected phases (hatched) a value above 1 only means writes, or the resync after a heal, were still in flight between agents; a dot marks, for each partitioned phase, the distinct states left once each side had settled: ${divergenceSummary(result)}.</p>
${divergenceSvg(result)}
<h2>Bytes exchanged (sent by all agents, cumulative)</h2>
${bytesSvg(result)}
<h2>Phases</h2>
<table><tr><th>phase</th><th>sides</th><th>time</th><th>writes acknowledged</th><th>sides converged</th><th>distinct states once settled</th></tr>${phaseRows}</table>
<h2>Agents</h2>
<table><tr><th>agent</th><th>writes acknowledged</th><th>final state digest</th></tr>${agentRows}</table>
${eventRows ? `<h2>Kills and restarts</h2><ul>${eventRows}</ul>` : ''}
</body>
</html>
`
}
