/**
 * W2, first sync of many small documents into an empty agent: Concord (hub
 * and client peers on LevelDB, one WebSocket) against automerge-repo (NodeFS
 * storage, its WebSocket adapters; the client finds every document by URL)
 * or y-websocket (one connection per document). Each side runs in a process
 * of its own (bench/peers/w2-child.ts); the client reaches its hub through a
 * TCP proxy here that counts the bytes both ways, so every contender is
 * measured at the same place (WebSocket framing included). Then the hub
 * changes 10 of the documents and the client comes back (a new process on
 * its folder): the catch-up's time and bytes. What the documents hold is the
 * workload's (bench/peers/w2-workloads.ts): W2's tasks, or many-names's
 * counters and short texts (bench/many-names.bench.ts).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { WorkloadName } from './w2-workloads.ts'

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const CHILD = fileURLToPath(new URL('./w2-child.ts', import.meta.url))

export type W2Contender = 'concord' | 'automerge-repo' | 'concord-yjs' | 'y-websocket'

/** What one first sync took. */
export interface W2Result {
  /** The hub's time to create and store its documents (before it serves). */
  readonly createMs: number
  readonly ms: number
  readonly clientCpuMs: number
  /** The client process's peak RSS until it held everything (MiB; Concord: until synced, before its check lists every name). */
  readonly clientPeakRssMiB: number
  /** The hub's CPU time while it served the client. */
  readonly hubCpuMs: number
  /** Bytes through the proxy, client to hub and hub to client. */
  readonly bytesUp: number
  readonly bytesDown: number
  readonly docs: number
  /** automerge-repo: finds that ended "unavailable" and were retried (first sync and catch-up). */
  readonly retries: number
  /** Back after 10 documents changed on the hub: time until the client holds every change, and the bytes both ways. */
  readonly catchupMs: number
  readonly catchupBytes: number
  /** Changed documents the client still lacked when it stopped waiting (automerge-repo, after 120 s; 0 for the others). */
  readonly catchupMissed: number
}

/**
 * How many connections the counting proxy can carry at once in this process:
 * two sockets each (client side and hub side) within the soft limit of open
 * files (`ulimit -n`, read from /proc/self/limits), less 1,000 for the rest.
 * Infinity where that cannot be read. y-websocket opens one connection per
 * document, so this caps its document count (at ulimit -n 20,000, 9,500).
 */
export function proxyConnectionLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = Number(line?.split(/\s{2,}/)[1])
    return Number.isFinite(soft) ? Math.floor((soft - 1000) / 2) : Number.POSITIVE_INFINITY
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/** A TCP proxy to `port` on 127.0.0.1 that counts what passes. */
async function countingProxy(port: number): Promise<{
  server: Server
  port: number
  up: () => number
  down: () => number
  /** Waits up to `ms` for every proxied connection to close, then destroys what is left (their sockets count against the open files). */
  drain: (ms: number) => Promise<void>
}> {
  let up = 0
  let down = 0
  const sockets = new Set<Socket>()
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  }
  const server = createServer((client) => {
    const hub = createConnection({ host: '127.0.0.1', port })
    track(client)
    track(hub)
    client.on('data', (chunk) => {
      up += chunk.length
    })
    hub.on('data', (chunk) => {
      down += chunk.length
    })
    client.pipe(hub)
    hub.pipe(client)
    client.on('error', () => hub.destroy())
    hub.on('error', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const drain = async (ms: number) => {
    const deadline = Date.now() + ms
    while (sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    for (const socket of sockets) socket.destroy()
  }
  return { server, port: (server.address() as AddressInfo).port, up: () => up, down: () => down, drain }
}

/** Starts the hub child and resolves with its port once it prints it. */
function startHub(
  kind: W2Contender,
  workload: WorkloadName,
  dir: string,
  docs: number,
): Promise<{ child: ChildProcess; port: number; buildMs: number; lines: () => string[] }> {
  const child = spawn(process.execPath, ['--import', TSX, CHILD, kind, workload, 'hub', dir, String(docs)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  const lines = () => out.split('\n').filter((l) => l.startsWith('{'))
  return new Promise((resolve, reject) => {
    let err = ''
    child.stdout!.on('data', (chunk) => {
      out += chunk
      const [line] = lines()
      if (line) resolve({ child, ...(JSON.parse(line) as { port: number; buildMs: number }), lines })
    })
    child.stderr!.on('data', (chunk) => {
      err += chunk
    })
    child.once('exit', (code) => reject(new Error(`w2 ${kind} hub exited (${code}): ${err}`)))
  })
}

function runClient(
  kind: W2Contender,
  workload: WorkloadName,
  phase: 'client' | 'catchup',
  dir: string,
  docs: number,
  port: number,
): Promise<{ ms: number; cpuMs: number; peakRssMiB: number; docs: number; retries?: number; missed?: number }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', TSX, CHILD, kind, workload, phase, dir, String(docs), String(port)],
      { maxBuffer: 1 << 28, timeout: 15 * 60_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`w2 ${kind} ${phase}: ${error.message}\n${stderr}`))
        else {
          const noise = stdout.trim().split('\n').length - 1
          if (noise > 0) process.stderr.write(`w2 ${kind} ${phase}: ${noise} other lines on stdout, the first: ${stdout.split('\n')[0].slice(0, 200)}\n`)
          resolve(
            JSON.parse(stdout.trim().split('\n').at(-1)!) as { ms: number; cpuMs: number; peakRssMiB: number; docs: number; retries?: number; missed?: number },
          )
        }
      },
    )
  })
}

/** One first sync of `docs` documents of `workload` for `kind`: a hub built and serving, an empty client through the proxy. */
export async function runW2(kind: W2Contender, docs: number, workload: WorkloadName = 'tasks'): Promise<W2Result> {
  if (kind === 'y-websocket' && docs > proxyConnectionLimit()) {
    throw new Error(`w2: ${docs} y-websocket connections need ${2 * docs} sockets in the counting proxy, over this process's limit of open files (ulimit -n)`)
  }
  const dir = await mkdtemp(join(tmpdir(), `concord-bench-w2-${kind}-`))
  let hub: ChildProcess | undefined
  let proxy: Awaited<ReturnType<typeof countingProxy>> | undefined
  try {
    const started = await startHub(kind, workload, dir, docs)
    hub = started.child
    proxy = await countingProxy(started.port)
    const result = await runClient(kind, workload, 'client', dir, docs, proxy.port)
    const [bytesUp, bytesDown] = [proxy.up(), proxy.down()]
    // The hub's CPU over the first sync, then the catch-up after it changed documents.
    const hubLine = async (count: number, signal: NodeJS.Signals): Promise<Record<string, number>> => {
      hub!.kill(signal)
      const deadline = Date.now() + 60_000
      while (started.lines().length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
      const line = started.lines()[count - 1]
      if (!line) throw new Error(`w2 ${kind} hub did not answer ${signal}`)
      return JSON.parse(line) as Record<string, number>
    }
    const { hubCpuMs } = await hubLine(2, 'SIGUSR2')
    await hubLine(3, 'SIGUSR1')
    // The first client's connections (one per document for y-websocket) closed before the catch-up opens as many again.
    await proxy.drain(30_000)
    const catchup = await runClient(kind, workload, 'catchup', dir, docs, proxy.port)
    return {
      createMs: started.buildMs,
      ms: result.ms,
      clientCpuMs: result.cpuMs,
      clientPeakRssMiB: result.peakRssMiB,
      hubCpuMs,
      bytesUp,
      bytesDown,
      docs: result.docs,
      retries: (result.retries ?? 0) + (catchup.retries ?? 0),
      catchupMs: catchup.ms,
      catchupBytes: proxy.up() + proxy.down() - bytesUp - bytesDown,
      catchupMissed: catchup.missed ?? 0,
    }
  } finally {
    proxy?.server.close()
    if (hub && hub.exitCode === null) {
      hub.removeAllListeners('exit')
      hub.kill('SIGKILL')
    }
    await rm(dir, { recursive: true, force: true })
  }
}
