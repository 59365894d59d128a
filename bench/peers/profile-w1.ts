/**
 * `npx tsx bench/peers/profile-w1.ts [contender] [clients] [count] [intervalMs]`:
 * one W1 run (bench/peers/w1.ts) with the hub and every client under
 * `node --cpu-prof`; prints the hub's and the first client's heaviest
 * functions by self time from the start of typing on (the `.cpuprofile`
 * files stay in the printed folder, for Chrome DevTools).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { runW1, type W1Contender } from './w1.ts'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

/** Self time per function (ms), heaviest first. */
export function selfTimes(profile: Profile, fromUs = 0): Array<{ fn: string; ms: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const self = new Map<string, number>()
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0
    if (at < fromUs) continue
    const node = byId.get(profile.samples[i])!
    const { functionName, url, lineNumber } = node.callFrame
    const where = url ? `${relative(process.cwd(), url.replace(/^file:\/\//, ''))}:${lineNumber + 1}` : ''
    const key = `${functionName || '(anonymous)'} ${where}`.trim()
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000)
  }
  return [...self.entries()].map(([fn, ms]) => ({ fn, ms })).sort((a, b) => b.ms - a.ms)
}

/** The longest stretches without an idle sample (the event loop held), ms, from `fromUs` on. */
export function busyStretches(profile: Profile, fromUs = 0): number[] {
  const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === '(idle)').map((node) => node.id))
  const stretches: number[] = []
  let at = profile.startTime
  let run = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0
    at += delta
    if (at < fromUs) continue
    if (idle.has(profile.samples[i])) {
      if (run > 0) stretches.push(run / 1000)
      run = 0
    } else run += delta
  }
  return stretches.sort((a, b) => b - a)
}

function summary(label: string, file: string, fromMs: number, top = 25): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const stretches = busyStretches(profile, fromMs * 1000)
  console.log(
    `\n${label}: longest busy stretches ${stretches
      .slice(0, 8)
      .map((ms) => ms.toFixed(0))
      .join(', ')} ms`,
  )
  const times = selfTimes(profile, fromMs * 1000)
  const total = times.reduce((sum, t) => sum + t.ms, 0)
  const idle = times.filter((t) => t.fn.startsWith('(idle)')).reduce((sum, t) => sum + t.ms, 0)
  console.log(`\n${label}: ${(total / 1000).toFixed(1)} s profiled, ${((total - idle) / 1000).toFixed(1)} s busy (${file})`)
  for (const { fn, ms } of times.slice(0, top)) console.log(`  ${ms.toFixed(0).padStart(7)} ms  ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${fn}`)
}

const contender = (process.argv[2] ?? 'concord') as W1Contender
const load = { clients: Number(process.argv[3] ?? 8), count: Number(process.argv[4] ?? 250), intervalMs: Number(process.argv[5] ?? 40), warmup: 10 }
const hubDir = await mkdtemp(join(tmpdir(), 'concord-prof-hub-'))
const clientDir = await mkdtemp(join(tmpdir(), 'concord-prof-client-'))
const result = await runW1(contender, load, {
  hubExecArgv: ['--cpu-prof', `--cpu-prof-dir=${hubDir}`],
  clientExecArgv: ['--cpu-prof', `--cpu-prof-dir=${clientDir}`],
})
console.log(`${contender} ${JSON.stringify(load)}: ${JSON.stringify(result)}`)
// Only what ran once typing began (start-up left out).
summary('hub', join(hubDir, readdirSync(hubDir)[0]), result.typingStartedAt ?? 0)
summary('a client', join(clientDir, readdirSync(clientDir).sort()[0]), result.typingStartedAt ?? 0)
