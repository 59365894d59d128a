/**
 * W2, first sync of many small Automerge documents into an empty agent:
 * Concord (hub and client peers on LevelDB, one WebSocket) against
 * automerge-repo (NodeFS storage, its WebSocket adapters; the client finds
 * every document by URL). Each side runs in a process of its own
 * (bench/peers/w2-child.ts); the client reaches its hub through a TCP proxy
 * here that counts the bytes both ways, so both contenders are measured at
 * the same place (WebSocket framing included).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { createConnection, createServer, type AddressInfo, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const CHILD = fileURLToPath(new URL('./w2-child.ts', import.meta.url))

export type W2Contender = 'concord' | 'automerge-repo'

/** What one first sync took. */
export interface W2Result {
  readonly ms: number
  readonly clientCpuMs: number
  /** The hub's CPU time while it served the client. */
  readonly hubCpuMs: number
  /** Bytes through the proxy, client to hub and hub to client. */
  readonly bytesUp: number
  readonly bytesDown: number
  readonly docs: number
}

/** A TCP proxy to `port` on 127.0.0.1 that counts what passes. */
async function countingProxy(port: number): Promise<{ server: Server; port: number; up: () => number; down: () => number }> {
  let up = 0
  let down = 0
  const server = createServer((client) => {
    const hub = createConnection({ host: '127.0.0.1', port })
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
  return { server, port: (server.address() as AddressInfo).port, up: () => up, down: () => down }
}

/** Starts the hub child and resolves with its port once it prints it. */
function startHub(kind: W2Contender, dir: string, docs: number): Promise<{ child: ChildProcess; port: number; lines: () => string[] }> {
  const child = spawn(process.execPath, ['--import', TSX, CHILD, kind, 'hub', dir, String(docs)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  const lines = () => out.split('\n').filter((l) => l.startsWith('{'))
  return new Promise((resolve, reject) => {
    let err = ''
    child.stdout!.on('data', (chunk) => {
      out += chunk
      const [line] = lines()
      if (line) resolve({ child, port: (JSON.parse(line) as { port: number }).port, lines })
    })
    child.stderr!.on('data', (chunk) => {
      err += chunk
    })
    child.once('exit', (code) => reject(new Error(`w2 ${kind} hub exited (${code}): ${err}`)))
  })
}

function runClient(kind: W2Contender, dir: string, docs: number, port: number): Promise<{ ms: number; cpuMs: number; docs: number }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', TSX, CHILD, kind, 'client', dir, String(docs), String(port)],
      { maxBuffer: 1 << 20, timeout: 15 * 60_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`w2 ${kind} client: ${error.message}\n${stderr}`))
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as { ms: number; cpuMs: number; docs: number })
      },
    )
  })
}

/** One first sync of `docs` documents for `kind`: a hub built and serving, an empty client through the proxy. */
export async function runW2(kind: W2Contender, docs: number): Promise<W2Result> {
  const dir = await mkdtemp(join(tmpdir(), `concord-bench-w2-${kind}-`))
  let hub: ChildProcess | undefined
  let proxy: Awaited<ReturnType<typeof countingProxy>> | undefined
  try {
    const started = await startHub(kind, dir, docs)
    hub = started.child
    proxy = await countingProxy(started.port)
    const result = await runClient(kind, dir, docs, proxy.port)
    hub.kill('SIGUSR2')
    const deadline = Date.now() + 10_000
    while (started.lines().length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    const hubCpuMs = (JSON.parse(started.lines()[1] ?? '{"hubCpuMs":null}') as { hubCpuMs: number }).hubCpuMs
    return { ms: result.ms, clientCpuMs: result.cpuMs, hubCpuMs, bytesUp: proxy.up(), bytesDown: proxy.down(), docs: result.docs }
  } finally {
    proxy?.server.close()
    if (hub && hub.exitCode === null) {
      hub.removeAllListeners('exit')
      hub.kill('SIGKILL')
    }
    await rm(dir, { recursive: true, force: true })
  }
}
