import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { tempDir } from '../helpers/temp-dir.ts'

/** Runs a demo in --short mode as its own process (as `npm run demo:*` would). */
async function runDemo(file: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', file, '--short', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Every agent pid the demo printed has exited. */
function assertNoLeftovers(stdout: string): void {
  const pids = [...stdout.matchAll(/pid (\d+)/g)].map((m) => Number(m[1]))
  assert.ok(pids.length > 0, 'the demo names its agent processes')
  assert.deepEqual(pids.filter(isRunning), [], 'no agent process left running')
}

/** A minimal well-formedness check of an XML fragment: every tag closed, in order. */
function assertWellFormed(xml: string, what: string): void {
  const stack: string[] = []
  for (const match of xml.matchAll(/<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, closing, name, , selfClosing] = match
    if (selfClosing) continue
    if (closing) assert.equal(stack.pop(), name, `${what}: </${name}> closes the wrong element`)
    else stack.push(name)
  }
  assert.deepEqual(stack, [], `${what}: unclosed elements`)
  assert.doesNotMatch(xml.replace(/<[^>]*>/g, ''), /[<>]/, `${what}: stray angle brackets in text`)
}

/** The report is one self-contained HTML file with the three SVG charts. */
async function checkReport(path: string, agents: number): Promise<void> {
  const html = await readFile(path, 'utf8')
  assert.match(html, /^<!DOCTYPE html>/)
  assert.match(html, /<\/html>\s*$/)
  assert.match(html, /Verdict: PASS/)
  assert.doesNotMatch(html, /<script|<link|<img|\ssrc=|url\(http|@import/i, 'no script and no external asset')
  const external = [...html.matchAll(/https?:\/\/[^\s"'<)]+/g)].map((m) => m[0]).filter((url) => url !== 'http://www.w3.org/2000/svg')
  assert.deepEqual(external, [], 'no external URL')
  const svgs = [...html.matchAll(/<svg[\s\S]*?<\/svg>/g)].map((m) => m[0])
  const ids = svgs.map((svg) => /id="([^"]+)"/.exec(svg)?.[1])
  assert.deepEqual(ids, ['timeline', 'divergence', 'bytes'])
  for (const [i, svg] of svgs.entries()) {
    assertWellFormed(svg, ids[i]!)
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
  }
  // The timeline has a row per agent per phase; the charts have data.
  assert.ok((svgs[0].match(/<rect /g) ?? []).length >= agents * 2, 'timeline bars')
  for (const chart of svgs.slice(1)) {
    const points = /<polyline [^>]*points="([^"]+)"/.exec(chart)?.[1].trim().split(/\s+/) ?? []
    assert.ok(points.length >= 4, 'the chart has a line with data')
    assert.ok(
      points.every((p) => /^-?[\d.]+,-?[\d.]+$/.test(p)),
      'numeric points',
    )
  }
  // Divergence goes above 1 during the partitions and ends at 1.
  const divergence = /<polyline [^>]*points="([^"]+)"/
    .exec(svgs[1])![1]
    .trim()
    .split(/\s+/)
    .map((p) => Number(p.split(',')[1]))
  assert.ok(Math.min(...divergence) < divergence.at(-1)!, 'a point above the final level (more than one state at some time)')
}

test('demo 1, shared context (--short): agents research together and converge', async () => {
  const data = await tempDir('concord-demo-context-')
  try {
    const run = await runDemo('demos/shared-context.ts', ['--data', data.path])
    assert.equal(run.code, 0, run.stdout + run.stderr)
    assert.match(run.stdout, /VERDICT: PASS/)
    assert.match(run.stdout, /ok {4}the counter counts each task once/)
    assert.match(run.stdout, /\[crdt-basics\] CRDTs merge/)
    assertNoLeftovers(run.stdout)
  } finally {
    await data.remove()
  }
})

test('demo 2, offline resync (--short): SIGKILL, restart from disk, resync only the gap', async () => {
  const data = await tempDir('concord-demo-offline-')
  try {
    const run = await runDemo('demos/offline-resync.ts', ['--data', data.path])
    assert.equal(run.code, 0, run.stdout + run.stderr)
    assert.match(run.stdout, /VERDICT: PASS/)
    assert.match(run.stdout, /resync after offline work \+ SIGKILL : +[\d.]+ [KM]?B/)
    assert.match(run.stdout, /full state \(newcomer, empty folder\) : +[\d.]+ [KM]?B/)
    assertNoLeftovers(run.stdout)
  } finally {
    await data.remove()
  }
})

test('demo 3, partitions (--short): convergence, no acknowledged write lost, the HTML report with its charts', async () => {
  const data = await tempDir('concord-demo-partitions-')
  try {
    const out = join(data.path, 'partitions.html')
    const run = await runDemo('demos/partitions.ts', ['--data', join(data.path, 'agents'), '--out', out])
    assert.equal(run.code, 0, run.stdout + run.stderr)
    assert.match(run.stdout, /VERDICT: PASS/)
    assert.match(run.stdout, /no acknowledged write lost: (\d+)\/\1 on every agent/)
    await checkReport(out, 3)
    assertNoLeftovers(run.stdout)
  } finally {
    await data.remove()
  }
})

test('npm start (--short): partition, SIGKILL, restart, heal, verified; report named; nothing left running', async () => {
  const data = await tempDir('concord-demo-start-')
  try {
    const run = await runDemo('demos/start.ts', ['--data', data.path])
    assert.equal(run.code, 0, run.stdout + run.stderr)
    assert.match(run.stdout, /VERDICT: PASS/)
    assert.match(run.stdout, /critic's folder held (\d+)\/\1 of its acknowledged writes/)
    const report = /HTML report +(\S+)/.exec(run.stdout)?.[1]
    assert.ok(report, 'the summary names the report')
    await checkReport(join(data.path, 'report.html'), 4)
    assertNoLeftovers(run.stdout)
  } finally {
    await data.remove()
  }
})

test('demo MCP (--short): three scripted agents coordinate through MCP servers on three synced peers; history and blame name them', async () => {
  const data = await tempDir('concord-demo-mcp-')
  try {
    const run = await runDemo('demos/mcp-agents.ts', ['--data', data.path])
    assert.equal(run.code, 0, run.stdout + run.stderr)
    assert.match(run.stdout, /VERDICT: PASS/)
    assert.match(run.stdout, /ok {4}the document holds exactly one finding per task, each line whole/)
    assert.match(run.stdout, /ok {4}blame gives each finding to the agent that wrote it, and the critic its edit/)
    assert.match(run.stdout, /== history of "notes"[\s\S]*#\s+1 +\S+ +critic/)
    assertNoLeftovers(run.stdout)
  } finally {
    await data.remove()
  }
})

test('a demo given a bad option prints its usage and exits 2 (no agent started)', async () => {
  const run = await runDemo('demos/partitions.ts', ['--no-such-option'])
  assert.equal(run.code, 2)
  assert.match(run.stderr, /usage: demo-partitions/)
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace')
})
