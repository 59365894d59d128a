/**
 * Child processes of the adversarial suite: the server under attack
 * (fixtures/server.ts) and the legitimate peers' probe (fixtures/probe.ts),
 * each a real Node process started here and ended by its pid; and the
 * server's resident set size, read from /proc/<pid>/status.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { once } from 'node:events'
import { createInterface } from 'node:readline'

const SERVER = fileURLToPath(new URL('./fixtures/server.ts', import.meta.url))
const PROBE = fileURLToPath(new URL('./fixtures/probe.ts', import.meta.url))

/** How a child process ended. */
export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

function spawnTs(script: string, args: readonly string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
}

/** Resolves with the first stdout line of `child` (rejects if it exits first or after `timeoutMs`). */
function firstLine(child: ChildProcess, what: string, stderr: () => string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    const timer = setTimeout(() => fail(new Error(`${what} printed nothing within ${timeoutMs} ms: ${stderr()}`)), timeoutMs)
    const onExit = (code: number | null, signal: string | null) => fail(new Error(`${what} exited (${code ?? signal}) before it was ready: ${stderr()}`))
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.off('exit', onExit)
      lines.close()
      reject(error)
    }
    child.once('exit', onExit)
    lines.once('line', (line) => {
      clearTimeout(timer)
      child.off('exit', onExit)
      lines.close()
      resolve(line)
    })
  })
}

/** Keeps the last `limit` characters a stream wrote. */
function tail(child: ChildProcess, limit = 8192): () => string {
  let text = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    text = (text + chunk.toString('utf8')).slice(-limit)
  })
  return () => text
}

/** The server under attack, in its own process. */
export interface ServerProcess {
  readonly url: string
  /** Its libp2p address (`/ip4/127.0.0.1/tcp/N/p2p/...`), when started with libp2p. */
  readonly multiaddr?: string
  readonly pid: number
  readonly dir: string
  /** How it ended, once it did (a crash shows here while the test still runs). */
  readonly exit: ExitInfo | undefined
  /** The end of what it wrote on stderr (a crash's message). */
  stderr(): string
  /** SIGTERM (clean close: sessions, store flushed), SIGKILL after `graceMs`; resolves with how it ended. */
  stop(graceMs?: number): Promise<ExitInfo & { readonly killed: boolean }>
  /** SIGKILL now (the harness's memory cap). */
  kill(): void
}

/** Starts fixtures/server.ts on `dir` (seeding `seed` counters on first start; also on libp2p if asked) and waits for its URL. */
export async function startServer(dir: string, seed = 0, options: { libp2p?: boolean } = {}): Promise<ServerProcess> {
  const child = spawnTs(SERVER, [dir, String(seed), ...(options.libp2p ? ['libp2p'] : [])])
  const stderr = tail(child)
  let exit: ExitInfo | undefined
  const exited = once(child, 'exit').then(([code, signal]) => {
    exit = { code, signal }
  })
  const { url, multiaddr } = JSON.parse(await firstLine(child, 'the server', stderr)) as { url: string; multiaddr?: string }
  const pid = child.pid!
  return {
    url,
    multiaddr,
    pid,
    dir,
    get exit() {
      return exit
    },
    stderr,
    async stop(graceMs = 15_000) {
      if (exit) return { ...exit, killed: false }
      child.kill('SIGTERM')
      let killed = false
      const timer = setTimeout(() => {
        killed = true
        child.kill('SIGKILL')
      }, graceMs)
      await exited
      clearTimeout(timer)
      return { ...exit!, killed }
    },
    kill() {
      if (!exit) child.kill('SIGKILL')
    },
  }
}

/** The legitimate peers (alice and bob) in their own process. */
export interface ProbeProcess {
  /** One write by alice; resolves with the ms until bob held it, or null once `deadlineMs` passed. */
  probe(kind: ProbeKind, deadlineMs?: number): Promise<number | null>
  /** What alice and bob hold of every probe name (opening them if needed). */
  values(): Promise<{ alice: Record<string, unknown>; bob: Record<string, unknown> }>
  /** Closes both peers and ends the process. */
  close(): Promise<void>
}

/** What the probe writes: a register, a Yjs document or an Automerge document (see fixtures/probe-names.ts). */
export type ProbeKind = 'register' | 'yjs' | 'automerge'

/** Starts fixtures/probe.ts against `url` and waits until alice and bob are connected. */
export async function startProbe(url: string): Promise<ProbeProcess> {
  const child = spawnTs(PROBE, [url])
  const stderr = tail(child)
  const exited = once(child, 'exit')
  const ready = JSON.parse(await firstLine(child, 'the probe', stderr)) as { op: string }
  if (ready.op !== 'ready') throw new Error(`the probe said ${JSON.stringify(ready)}`)
  const lines = createInterface({ input: child.stdout! })
  type Reply = { op: string; latencies?: Array<number | null>; message?: string; alice?: Record<string, unknown>; bob?: Record<string, unknown> }
  const waiting: Array<(message: Reply) => void> = []
  lines.on('line', (line) => waiting.shift()?.(JSON.parse(line)))
  const ask = (command: object) =>
    new Promise<Reply>((resolve, reject) => {
      if (child.exitCode !== null) return reject(new Error(`the probe exited: ${stderr()}`))
      waiting.push(resolve)
      child.stdin!.write(`${JSON.stringify(command)}\n`)
    })
  return {
    async probe(kind, deadlineMs = 3000) {
      const reply = await ask({ op: 'probe', kind, count: 1, deadlineMs })
      if (reply.op !== 'probe') throw new Error(`probe failed: ${reply.message ?? JSON.stringify(reply)}`)
      return reply.latencies![0]
    },
    async values() {
      const reply = await ask({ op: 'values' })
      if (reply.op !== 'values') throw new Error(`values failed: ${reply.message ?? JSON.stringify(reply)}`)
      return { alice: reply.alice!, bob: reply.bob! }
    },
    async close() {
      if (child.exitCode !== null) return
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      child.stdin!.write(`${JSON.stringify({ op: 'close' })}\n`)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Resident set size of process `pid` in MiB (VmRSS), or undefined once it is gone. */
export function rssMiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

/** Samples the RSS of `pid` every `everyMs`; calls `onCap` once if it passes `capMiB`. */
export function sampleRss(pid: number, capMiB: number, onCap: (mib: number) => void, everyMs = 20): { stop(): { maxMiB: number; samples: number } } {
  let maxMiB = 0
  let samples = 0
  let capped = false
  const read = () => {
    const mib = rssMiB(pid)
    if (mib === undefined) return
    samples++
    if (mib > maxMiB) maxMiB = mib
    if (mib > capMiB && !capped) {
      capped = true
      onCap(mib)
    }
  }
  read()
  const timer = setInterval(read, everyMs)
  return {
    stop() {
      read()
      clearInterval(timer)
      return { maxMiB, samples }
    },
  }
}
