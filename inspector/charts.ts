/**
 * Small SVG charts, as strings, shared by the inspector page (drawn in the
 * browser) and the demos' HTML reports (demos/lib/report.ts, written as
 * files): a line or step chart over time, and a lane chart (one row per
 * agent, marks and bars along a time axis). No DOM, no dependency: every
 * text that goes in is escaped here, so callers pass plain strings.
 */

/** Colours given to agents and series, in order (Tableau 10). */
export const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#ff9da7', '#bab0ac'] as const

/** Escapes text for SVG or HTML content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')
}

/** The colour of `key` among `keys` (its index in the palette, cycling); a key not among them gets grey. */
export function colorOf(key: string, keys: readonly string[]): string {
  const index = keys.indexOf(key)
  return index < 0 ? '#999999' : PALETTE[index % PALETTE.length]
}

/** A horizontal axis: its domain and the ticks to draw (position in the domain, label). */
export interface XAxis {
  readonly min: number
  readonly max: number
  readonly ticks: ReadonlyArray<{ readonly at: number; readonly label: string }>
}

/** Layout of a chart, px (defaults: 960 wide, 110 left for labels, 20 right). */
export interface ChartFrame {
  readonly width?: number
  readonly left?: number
  readonly right?: number
}

/** Ticks every `step` of the domain from `min`, labelled by `label`. */
export function ticksEvery(min: number, max: number, step: number, label: (at: number) => string): XAxis['ticks'] {
  const ticks: Array<{ at: number; label: string }> = []
  if (!(step > 0) || !Number.isFinite(min) || !Number.isFinite(max)) return ticks
  for (let at = min; at <= max + step * 1e-9 && ticks.length < 200; at += step) ticks.push({ at, label: label(at) })
  return ticks
}

/** Seconds ticks for a span of `ms` (1, 2, 5 or 10 s apart): the demos' time axis. */
export function secondTicks(ms: number): XAxis['ticks'] {
  const seconds = ms / 1000
  const step = seconds > 40 ? 10 : seconds > 16 ? 5 : seconds > 6 ? 2 : 1
  return ticksEvery(0, ms, step * 1000, (at) => `${Math.round(at / 1000)}s`)
}

function frameOf(frame: ChartFrame): { width: number; left: number; right: number } {
  return { width: frame.width ?? 960, left: frame.left ?? 110, right: frame.right ?? 20 }
}

/** The function placing a domain value on the x axis, clamped to the domain. */
export function scaleX(axis: Pick<XAxis, 'min' | 'max'>, frame: ChartFrame = {}): (value: number) => number {
  const { width, left, right } = frameOf(frame)
  const span = Math.max(1e-9, axis.max - axis.min)
  return (value) => left + ((Math.max(axis.min, Math.min(axis.max, value)) - axis.min) / span) * (width - left - right)
}

/** The time axis line and its ticks at height `y`. */
export function axisSvg(axis: XAxis, y: number, frame: ChartFrame = {}): string {
  const { width, left, right } = frameOf(frame)
  const x = scaleX(axis, frame)
  const ticks = axis.ticks.map(
    (tick) =>
      `<line x1="${x(tick.at).toFixed(1)}" y1="${y}" x2="${x(tick.at).toFixed(1)}" y2="${y + 4}" stroke="#555"/>` +
      `<text x="${x(tick.at).toFixed(1)}" y="${y + 16}" text-anchor="middle" class="tick">${escapeXml(tick.label)}</text>`,
  )
  return `<line x1="${left}" y1="${y}" x2="${width - right}" y2="${y}" stroke="#555"/>${ticks.join('')}`
}

/** One line of a {@link lineChartSvg}. */
export interface LineSeries {
  /** Points `[x, y]`, in x order. */
  readonly values: ReadonlyArray<readonly [number, number]>
  readonly color: string
  /** Draw as steps (the value holds until the next point). */
  readonly step?: boolean
  /** Shown as the line's tooltip. */
  readonly label?: string
}

/** Options of {@link lineChartSvg}. */
export interface LineChartOptions extends ChartFrame {
  /** The `id` of the `<svg>`. */
  readonly id?: string
  /** What the chart shows (its `aria-label`). */
  readonly label: string
  readonly height?: number
  readonly x: XAxis
  /** Top of the y axis, and how many grid lines, labelled by `yUnit`. */
  readonly yMax: number
  readonly yTicks?: number
  readonly yUnit?: (value: number) => string
  readonly series: readonly LineSeries[]
  /** X positions of dashed vertical guides (phase starts). */
  readonly guides?: readonly number[]
  /** SVG drawn under the lines, above the grid (made by the caller with {@link escapeXml}), and its `<defs>`. */
  readonly underlay?: (place: { x: (value: number) => number; y: (value: number) => number; top: number; bottom: number }) => string
  readonly defs?: string
}

/** A line (or step) chart over `x`, as one `<svg>` element. */
export function lineChartSvg(options: LineChartOptions): string {
  const { width, left, right } = frameOf(options)
  const height = options.height ?? 220
  const top = 14
  const bottom = height - 30
  const x = scaleX(options.x, options)
  const yMax = Math.max(1e-9, options.yMax)
  const y = (value: number) => bottom - (Math.max(0, Math.min(yMax, value)) / yMax) * (bottom - top)
  const unit = options.yUnit ?? ((value: number) => String(Math.round(value)))
  const grid: string[] = []
  const ticks = Math.max(1, options.yTicks ?? 4)
  for (let i = 0; i <= ticks; i++) {
    const value = (yMax / ticks) * i
    grid.push(
      `<line x1="${left}" y1="${y(value).toFixed(1)}" x2="${width - right}" y2="${y(value).toFixed(1)}" stroke="#eee"/>` +
        `<text x="${left - 8}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end" class="tick">${escapeXml(unit(value))}</text>`,
    )
  }
  const guides = (options.guides ?? [])
    .map((at) => `<line x1="${x(at).toFixed(1)}" y1="${top}" x2="${x(at).toFixed(1)}" y2="${bottom}" stroke="#999" stroke-dasharray="3,3"/>`)
    .join('')
  const lines = options.series.map((series) => {
    const points: string[] = []
    for (const [i, [px, py]] of series.values.entries()) {
      if (series.step && i > 0) points.push(`${x(px).toFixed(1)},${y(series.values[i - 1][1]).toFixed(1)}`)
      points.push(`${x(px).toFixed(1)},${y(py).toFixed(1)}`)
    }
    const title = series.label === undefined ? '' : `<title>${escapeXml(series.label)}</title>`
    return `<polyline fill="none" stroke="${escapeXml(series.color)}" stroke-width="2" points="${points.join(' ')}">${title}</polyline>`
  })
  const id = options.id === undefined ? '' : ` id="${escapeXml(options.id)}"`
  return (
    `<svg xmlns="http://www.w3.org/2000/svg"${id} width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(options.label)}">` +
    (options.defs ?? '') +
    grid.join('') +
    (options.underlay?.({ x, y, top, bottom }) ?? '') +
    guides +
    lines.join('') +
    axisSvg(options.x, bottom, options) +
    `</svg>`
  )
}

/** A mark on a lane of a {@link laneChartSvg}: a dot at `at`. */
export interface LaneMark {
  readonly lane: number
  readonly at: number
  readonly color: string
  /** Its tooltip. */
  readonly title: string
  /** Radius, px (default 5). */
  readonly radius?: number
  /** Extra attributes' values: `data-<key>="<value>"` on the dot (the page finds records by them). */
  readonly data?: Readonly<Record<string, string>>
}

/** A bar on a lane: from `from` to `to`. */
export interface LaneBar {
  readonly lane: number
  readonly from: number
  readonly to: number
  readonly color: string
  readonly title: string
  /** `url(#pattern)` or a colour; default `color`. */
  readonly fill?: string
  readonly opacity?: number
}

/** Options of {@link laneChartSvg}. */
export interface LaneChartOptions extends ChartFrame {
  readonly id?: string
  readonly label: string
  readonly x: XAxis
  /** One row each, top to bottom, with its label at the left. */
  readonly lanes: readonly string[]
  readonly marks?: readonly LaneMark[]
  readonly bars?: readonly LaneBar[]
  /** Row height, px (default 28). */
  readonly row?: number
  readonly defs?: string
}

/** A lane chart: one row per lane, bars and dots along the x axis, as one `<svg>` element. */
export function laneChartSvg(options: LaneChartOptions): string {
  const { width, left } = frameOf(options)
  const row = options.row ?? 28
  const top = 8
  const height = top + options.lanes.length * row + 30
  const x = scaleX(options.x, options)
  const parts: string[] = []
  for (const [i, lane] of options.lanes.entries()) {
    parts.push(`<text x="${left - 8}" y="${top + i * row + row / 2 + 4}" text-anchor="end" class="label">${escapeXml(lane)}</text>`)
    parts.push(`<line x1="${left}" y1="${top + i * row + row / 2}" x2="${width - (options.right ?? 20)}" y2="${top + i * row + row / 2}" stroke="#eee"/>`)
  }
  for (const bar of options.bars ?? []) {
    const x0 = x(bar.from)
    const x1 = x(bar.to)
    parts.push(
      `<rect x="${x0.toFixed(1)}" y="${top + bar.lane * row + 4}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${row - 10}" fill="${escapeXml(bar.fill ?? bar.color)}" opacity="${bar.opacity ?? 0.85}"><title>${escapeXml(bar.title)}</title></rect>`,
    )
  }
  for (const mark of options.marks ?? []) {
    const data = Object.entries(mark.data ?? {})
      .map(([key, value]) => ` data-${key.replace(/[^a-z0-9-]/g, '')}="${escapeXml(value)}"`)
      .join('')
    parts.push(
      `<circle cx="${x(mark.at).toFixed(1)}" cy="${top + mark.lane * row + row / 2}" r="${mark.radius ?? 5}" fill="${escapeXml(mark.color)}" stroke="#fff"${data}><title>${escapeXml(mark.title)}</title></circle>`,
    )
  }
  const id = options.id === undefined ? '' : ` id="${escapeXml(options.id)}"`
  return (
    `<svg xmlns="http://www.w3.org/2000/svg"${id} width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(options.label)}">` +
    (options.defs ?? '') +
    parts.join('') +
    axisSvg(options.x, height - 26, options) +
    `</svg>`
  )
}
