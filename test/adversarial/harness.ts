/**
 * The adversarial suite's scaffold: each attack runs against a fresh server
 * process (fixtures/server.ts, credentials and per-name access, its own
 * LevelDB folder) while the legitimate peers (fixtures/probe.ts) keep
 * writing, and is judged only from outside:
 * - the server process is alive when the attack ends, and stops cleanly on
 *   SIGTERM afterwards;
 * - its RSS (sampled from /proc) stays under {@link RSS_BOUND_MIB};
 * - alice's writes reach bob within {@link LATENCY_BOUND_MS}: the median of
 *   {@link PROBES} writes made while the attack runs. This is the one timing
 *   assertion of the test suite, because issue 11 makes it the requirement;
 *   it is kept robust to a shared machine: a median (one slow sample does
 *   not decide), and a bound over 5x the slowest median measured under any
 *   defended attack (up to ~170 ms single samples, medians under 60 ms on
 *   the loaded 2-core VM), where undefended servers miss it by seconds;
 * - afterwards a newcomer (carol) connects and syncs the probed name;
 * - the reopened folder (`concord inspect` / `history`, after the server
 *   stopped) holds nothing the attacker sent.
 * Every run's figures are printed as a test diagnostic and, when
 * CONCORD_ADVERSARIAL_REPORT names a file, appended to it as a JSON line.
 */
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import type { TestContext } from 'node:test'
import { tempDir } from '../helpers/temp-dir.ts'
import { cliJson } from '../cli/helpers.ts'
import { rssMiB, sampleRss, startProbe, startServer, type ProbeKind, type ProbeProcess, type ServerProcess } from './processes.ts'
import { PROBE_NAMES } from './fixtures/probe-names.ts'
import { TOKENS } from './fixtures/roles.ts'
import { createPeer, type Peer } from '../../peer/index.ts'

/**
 * RSS bound of the server under any attack, MiB. Measured on the 2-core VM:
 * 105-130 MiB at rest after start and the legitimate peers' writes (tsx,
 * Yjs, Automerge's wasm, LevelDB; 165-175 MiB with libp2p), and at most
 * 180 MiB under any of these attacks once defended; the bound leaves about
 * twice that for the budgets the attacks may fill (reassembly, queues,
 * waiting updates), and is far below what an undefended server takes
 * (390 MiB to the 1.5 GiB cap).
 */
export const RSS_BOUND_MIB = 320
/** Past this the harness kills the server (so that an unbounded one cannot take the shared machine down). */
export const RSS_HARD_CAP_MIB = 1536
/** The convergence requirement of the issue: a legitimate write reaches the other peer within 1 s. */
export const LATENCY_BOUND_MS = 1000
/** Legitimate writes measured per attack. */
export const PROBES = 5
/** A probe that has not arrived by then counts as failed (and ends waiting). */
export const PROBE_DEADLINE_MS = 3000

/** What a test gets to mount its attack. */
export interface AttackContext {
  readonly server: ServerProcess
  /** `ws://127.0.0.1:PORT/concord` */
  readonly url: string
  /** `ws://127.0.0.1:PORT/yjs` (a y-websocket server URL; the room is appended by the client). */
  readonly yjsUrl: string
  readonly host: string
  readonly port: number
  /** The server's libp2p multiaddr (with `libp2p: true` in the spec). */
  readonly multiaddr?: string
}

/** A running attack; `stop` ends it and resolves with what the attacker saw (figures for the report). */
export interface RunningAttack {
  stop(): Promise<Record<string, unknown> | void>
}

/** A read-only view of the server's folder after it stopped. */
export interface StoreView {
  readonly names: ReadonlyArray<{ readonly name: string; readonly type: string; readonly records: number; readonly size: number }>
  has(name: string): boolean
  value(name: string): Promise<unknown>
  /** The agents of every record of `name` (who the log says wrote it). */
  agents(name: string): Promise<string[]>
}

/** What the legitimate peers held of every probe name right after the attack. */
export interface LegitimateView {
  readonly alice: Record<string, unknown>
  readonly bob: Record<string, unknown>
}

/** One attack. */
export interface AttackSpec {
  readonly attack: string
  /** Counters `seed/NNNN` the server holds before the attack (default 0). */
  readonly seed?: number
  /** Whether the server also listens on libp2p. */
  readonly libp2p?: boolean
  /** What the legitimate peers write (default a register). */
  readonly probe?: ProbeKind
  /** Time the attack runs before the first legitimate write (default 500 ms). */
  readonly settleMs?: number
  start(context: AttackContext): Promise<RunningAttack>
  /**
   * Throws if the stopped server's folder holds anything the attacker sent;
   * `peers` is what alice and bob held of the probe names once the attack
   * ended (what reached the legitimate peers).
   */
  checkStore(store: StoreView, peers: LegitimateView): Promise<void>
  /** Attack-specific judgement of what the attacker saw (the figures `stop` returned), after the common ones. */
  checkAttacker?(seen: Record<string, unknown>): void
}

/** What one run measured. */
export interface AttackFigures {
  attack: string
  outcome: string
  baseRssMiB: number
  maxRssMiB: number
  latenciesMs: Array<number | null>
  medianMs: number | null
  attackMs: number
  /** ms until a newcomer that connected after the attack held alice's writes to the probed name (null: not within 10 s). */
  newcomerMs: number | null
  serverExit: string
  store: string
  attacker?: Record<string, unknown>
  /** Where the test's time went, ms per phase. */
  phasesMs?: Record<string, number>
}

/** Times consecutive phases: each call names the phase that just ended; returns the table so far. */
function phases(): (ended: string) => Record<string, number> {
  const table: Record<string, number> = {}
  let last = performance.now()
  return (ended) => {
    const now = performance.now()
    table[ended] = Math.round(now - last)
    last = now
    return table
  }
}

/** Median with missing samples (null: the deadline passed) counting as infinitely late. */
export function median(samples: ReadonlyArray<number | null>): number {
  const sorted = samples.map((s) => s ?? Infinity).sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

async function readStore(dir: string): Promise<StoreView> {
  const listed = await cliJson<{ names: StoreView['names'] }>(['inspect', '--dir', dir])
  assert.equal(listed.code, 0, `concord inspect failed: ${listed.stderr}`)
  const names = listed.json.names
  return {
    names,
    has: (name) => names.some((info) => info.name === name),
    async value(name) {
      const run = await cliJson<{ value: unknown }>(['inspect', '--dir', dir, name])
      assert.equal(run.code, 0, `concord inspect ${name} failed: ${run.stderr}`)
      return run.json.value
    },
    async agents(name) {
      const run = await cliJson<Array<{ agent: string }>>(['history', '--dir', dir, name, '--limit', '1000000'])
      assert.equal(run.code, 0, `concord history ${name} failed: ${run.stderr}`)
      return run.json.map((record) => record.agent)
    },
  }
}

function record(figures: AttackFigures, t: TestContext): void {
  t.diagnostic(JSON.stringify(figures))
  const file = process.env.CONCORD_ADVERSARIAL_REPORT
  if (file) appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), ...figures })}\n`)
}

const round1 = (n: number) => Math.round(n * 10) / 10

/** Runs one attack against a fresh server while the legitimate peers write, then judges it (see the module comment). */
export async function underAttack(t: TestContext, spec: AttackSpec): Promise<AttackFigures> {
  const phase = phases()
  const folder = await tempDir('concord-adversarial-')
  const server = await startServer(folder.path, spec.seed ?? 0, { libp2p: spec.libp2p }).catch(async (error: unknown) => {
    await folder.remove()
    throw error
  })
  let cappedAt: number | undefined
  const rss = sampleRss(server.pid, RSS_HARD_CAP_MIB, (mib) => {
    cappedAt = mib
    server.kill()
  })
  const probeKind = spec.probe ?? 'register'
  const address = new URL(server.url)
  const context: AttackContext = {
    server,
    url: server.url,
    yjsUrl: `ws://${address.host}/yjs`,
    host: address.hostname,
    port: Number(address.port),
    multiaddr: server.multiaddr,
  }
  const figures: AttackFigures = {
    attack: spec.attack,
    outcome: 'held',
    baseRssMiB: 0,
    maxRssMiB: 0,
    latenciesMs: [],
    medianMs: null,
    attackMs: 0,
    newcomerMs: null,
    serverExit: '',
    store: '',
  }
  let storeError: unknown
  let stopped: Awaited<ReturnType<ServerProcess['stop']>> | undefined
  let aliveAfterAttack = false
  let peers: LegitimateView = { alice: {}, bob: {} }
  let probe: ProbeProcess | undefined
  try {
    phase('server')
    probe = await startProbe(server.url)
    phase('probe')
    // The legitimate pair works before the attack (and the names it writes exist).
    const warm = await probe.probe(probeKind, 20_000)
    assert.notEqual(warm, null, 'the legitimate peers converge before the attack')
    figures.baseRssMiB = round1(rssMiB(server.pid) ?? 0)

    phase('warm')
    const started = performance.now()
    const attack = await spec.start(context)
    try {
      await new Promise((resolve) => setTimeout(resolve, spec.settleMs ?? 500))
      for (let i = 0; i < PROBES; i++) {
        if (server.exit) break
        figures.latenciesMs.push(await probe!.probe(probeKind, PROBE_DEADLINE_MS))
        // Three samples over the bound decide the median: stop waiting.
        if (figures.latenciesMs.filter((s) => s === null || s >= LATENCY_BOUND_MS).length > PROBES / 2) break
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    } finally {
      const seen = await attack.stop()
      if (seen) figures.attacker = seen
      figures.attackMs = Math.round(performance.now() - started)
    }
    phase('attack')
    aliveAfterAttack = server.exit === undefined
    peers = await probe.values().catch(() => ({ alice: {}, bob: {} }))
    if (aliveAfterAttack) figures.newcomerMs = await newcomerSyncs(server.url, probeKind, peers.alice[PROBE_NAMES[probeKind]])
    phase('newcomer')
  } finally {
    await probe?.close()
    stopped = await server.stop()
    phase('stop')
    const sampled = rss.stop()
    figures.maxRssMiB = round1(sampled.maxMiB)
    figures.latenciesMs = figures.latenciesMs.map((s) => (s === null ? null : Math.round(s)))
    figures.medianMs = figures.latenciesMs.length > 0 && Number.isFinite(median(figures.latenciesMs)) ? median(figures.latenciesMs) : null
    figures.serverExit = stopped.killed ? 'SIGKILL after SIGTERM grace' : `code ${stopped.code} signal ${stopped.signal}`
    if (cappedAt !== undefined) figures.outcome = `killed by the harness at ${Math.round(cappedAt)} MiB RSS`
    else if (!aliveAfterAttack) figures.outcome = `server died during the attack (${figures.serverExit}): ${lastLine(server.stderr())}`
    try {
      const store = await readStore(folder.path)
      assert.ok(store.has(PROBE_NAMES[probeKind]), 'the store holds the legitimate writes')
      await spec.checkStore(store, peers)
      figures.store = 'clean'
    } catch (error) {
      storeError = error
      figures.store = `attacker data found: ${(error as Error).message.split('\n')[0]}`
    }
    figures.phasesMs = phase('store')
    record(figures, t)
    await folder.remove()
  }

  assert.ok(aliveAfterAttack, `the server stays alive: ${figures.outcome}`)
  assert.ok(!stopped.killed && stopped.code === 0, `the server stops cleanly after the attack (${figures.serverExit}): ${lastLine(server.stderr())}`)
  assert.ok(figures.maxRssMiB < RSS_BOUND_MIB, `the server's RSS stays under ${RSS_BOUND_MIB} MiB (max ${figures.maxRssMiB} MiB)`)
  const mid = median(figures.latenciesMs)
  assert.ok(
    figures.latenciesMs.length > 0 && mid < LATENCY_BOUND_MS,
    `a legitimate write reaches the other legitimate peer within ${LATENCY_BOUND_MS} ms during the attack (median of ${JSON.stringify(figures.latenciesMs)})`,
  )
  assert.notEqual(figures.newcomerMs, null, 'a newcomer that connects after the attack syncs the probed name')
  if (storeError) throw storeError
  spec.checkAttacker?.(figures.attacker ?? {})
  return figures
}

/** Connects carol (a legitimate peer) to `url`; resolves with the peer once its handshake is done, or null after `timeoutMs`. */
export async function legitimateNewcomer(url: string, timeoutMs = 10_000): Promise<Peer | null> {
  const carol = await createPeer({ agentId: 'carol', auth: { token: TOKENS.carol } })
  let timer: ReturnType<typeof setTimeout> | undefined
  const connected = await Promise.race([
    carol.connect(url).then(
      () => true,
      () => false,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs)
    }),
  ])
  clearTimeout(timer)
  if (connected) return carol
  await carol.close()
  return null
}

/** Whether `value` (a copy of the probed name) holds every write the probe made, as `written` (alice's copy) shows them. */
function holdsProbeWrites(kind: ProbeKind, value: unknown, written: unknown): boolean {
  if (kind === 'register') return value === written
  const field = (doc: unknown) => (doc as { probe?: unknown } | undefined)?.probe
  if (kind === 'automerge') return field(value) === field(written)
  const marks = String(field(written) ?? '').match(/w\d+-\d+;/g) ?? []
  const text = String(field(value) ?? '')
  return marks.every((mark) => text.includes(mark))
}

/** A newcomer connects and waits until its copy of the probed name holds alice's writes; resolves with the ms it took, or null (10 s). */
async function newcomerSyncs(url: string, kind: ProbeKind, written: unknown): Promise<number | null> {
  const started = performance.now()
  const carol = await legitimateNewcomer(url)
  if (!carol) return null
  try {
    const name = PROBE_NAMES[kind]
    const replica = kind === 'register' ? await carol.register(name) : kind === 'yjs' ? await carol.yjs(name) : await carol.automerge(name)
    while (!holdsProbeWrites(kind, replica.value(), written)) {
      if (performance.now() - started > 10_000) return null
      await sleep(10)
    }
    return Math.round(performance.now() - started)
  } finally {
    await carol.close()
  }
}

function lastLine(text: string): string {
  const lines = text
    .trim()
    .split('\n')
    .filter((line) => line.trim().length > 0)
  const fatal = lines.find((line) => /FATAL|out of memory|RuntimeError|Error:/.test(line))
  return (fatal ?? lines.at(-1) ?? '').slice(0, 300)
}

/** Waits `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Fails unless the attack did what it claims: `seen[key]` (a count of what reached the server) is positive. */
export function attacked(seen: Record<string, unknown>, key: string): void {
  assert.ok(typeof seen[key] === 'number' && (seen[key] as number) > 0, `the attack reached the server (${key}: ${JSON.stringify(seen)})`)
}
