import { test } from 'node:test'
import assert from 'node:assert/strict'
import { divergenceCheck, peakDivergence, type PhaseRecord, type ScenarioResult } from '../../demos/lib/partition-scenario.ts'
import { placePhaseLabels, renderReport, timelineSvg } from '../../demos/lib/report.ts'

function phase(label: string, groups: string[][], start: number, end: number, settledDistinct: number): PhaseRecord {
  return { label, groups, start, end, acked: 3, settled: true, settledDistinct }
}

/** A run like `npm run demo:partitions`: a long schedule whose final heal is a sliver at the end. */
function result(phases: PhaseRecord[], samples: Array<[number, number, number]>): ScenarioResult {
  return {
    agents: ['a', 'b', 'c'],
    phases,
    samples: samples.map(([t, distinct, p]) => ({ t, distinct, live: 3, bytes: t * 10, phase: p })),
    events: [],
    ackedTotal: 9,
    ackedBy: { a: 3, b: 3, c: 3 },
    missing: [],
    finalDigests: { a: 'x', b: 'x', c: 'x' },
    finalFacts: 9,
    bytesTotal: 1000,
    durationMs: phases.at(-1)!.end,
    survivals: [],
    checks: [],
  }
}

const schedule = [
  phase('connected', [['a', 'b', 'c']], 0, 1200, 1),
  phase('split 2|1', [['a', 'b'], ['c']], 1200, 2600, 2),
  phase('split 1|2', [['a'], ['b', 'c']], 2600, 3900, 2),
  phase('final heal', [['a', 'b', 'c']], 3900, 4000, 1),
]

test('the report: every phase keeps its whole label (a sliver of a phase gets it above the bands, inside the picture)', () => {
  const run = result(schedule, [
    [0, 1, 0],
    [600, 3, 0],
    [2000, 2, 1],
    [3000, 2, 2],
    [3950, 1, 3],
  ])
  const svg = timelineSvg(run)
  for (const [i, p] of schedule.entries()) assert.match(svg, new RegExp(`class="phase">(${i + 1}\\. )?${p.label.replace('|', '\\|')}<title>`), p.label)
  const placed = placePhaseLabels(run)
  assert.equal(placed.labels[3].inside, false, 'the final heal does not fit its band')
  assert.equal(placed.labels[3].text, '4. final heal')
  for (const label of placed.labels) {
    const half = (label.text.length * 6.2 + 4) / 2
    assert.ok(label.x - half >= 0 && label.x + half <= 960, `${label.text} inside the picture`)
  }
  const html = renderReport(run, 'r', 'intro')
  assert.match(
    html,
    /The schedule \(every phase and the final heal, the span of the charts\) took 4\.0 s; the total the demo prints also counts starting and stopping/,
  )
  assert.match(html, /a value above 1 only means writes, or the resync after a heal, were still in flight/)
})

test('divergence is counted once each side settled, never from writes in flight in a connected phase', () => {
  // 3 distinct states while connected (writes in flight), but the partitions left nothing apart: not a divergence.
  const inFlightOnly = result(
    schedule.map((p) => ({ ...p, settledDistinct: 1 })),
    [
      [600, 3, 0],
      [2000, 1, 1],
      [3000, 1, 2],
    ],
  )
  assert.equal(divergenceCheck(inFlightOnly.phases).ok, false)
  assert.deepEqual(peakDivergence(inFlightOnly), { partitioned: 1, connected: 3, settled: 1 })
  const diverged = result(schedule, [
    [600, 3, 0],
    [2000, 2, 1],
    [3000, 2, 2],
  ])
  const check = divergenceCheck(diverged.phases)
  assert.equal(check.ok, true)
  assert.match(check.what, /once each side had settled, up to 2 distinct states remained \("split 2\|1", 2 sides\)/)
  assert.equal(divergenceCheck([phase('connected', [['a', 'b']], 0, 10, 1)]).ok, true, 'no partition: nothing to prove')
})
