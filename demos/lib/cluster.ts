/**
 * The orchestrator side of the demos: starts agent processes (each a real
 * Node process with its own LevelDB folder, listening on WebSocket), sends
 * them requests over IPC, kills them with SIGKILL and restarts them from
 * their folders. Every child is killed on every exit path of the
 * orchestrator (normal end, error, SIGINT/SIGTERM), and children exit by
 * themselves when the orchestrator's IPC channel closes.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { AgentConfig, Command, ReadyEvent, Requests, ResponseMessage } from './protocol.ts'

const here = fileURLToPath(new URL('.', import.meta.url))
const AGENT = join(here, 'agent.ts')
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/** Every child of every cluster in this process, killed on exit. */
const allChildren = new Set<ChildProcess>()
let exitHooked = false
function hookExit(): void {
  if (exitHooked) return
  exitHooked = true
  process.on('exit', () => {
    for (const child of allChildren) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const child of allChildren) child.kill('SIGKILL')
      process.exit(130)
    })
  }
}

/** One agent process and what the orchestrator knows of it. */
export interface AgentHandle {
  readonly id: string
  readonly dir: string
  /** Its WebSocket URL (the same across restarts). */
  url: string
  port: number
  /** 1 for the first process, +1 per restart. */
  incarnation: number
  child: ChildProcess
  alive: boolean
  /** Milliseconds the last start took. */
  startupMs: number
}

/** Options of a {@link Cluster}. */
export interface ClusterOptions {
  /** Folder under which each agent gets `<root>/<id>`. */
  readonly root: string
  /** Per-request timeout, ms (default 30000). */
  readonly timeoutMs?: number
}

/** Agent processes driven over IPC. */
export class Cluster {
  readonly agents = new Map<string, AgentHandle>()
  private nextRid = 1
  private readonly pending = new Map<
    number,
    { agent: string; resolve: (value: unknown) => void; reject: (error: Error) => void; timer: ReturnType<typeof setTimeout> }
  >()

  constructor(private readonly options: ClusterOptions) {
    hookExit()
  }

  /** The handle of `id` (throws if unknown). */
  agent(id: string): AgentHandle {
    const agent = this.agents.get(id)
    if (!agent) throw new Error(`no agent ${id}`)
    return agent
  }

  /** Starts several agents at once. */
  async startAll(ids: readonly string[]): Promise<AgentHandle[]> {
    return Promise.all(ids.map((id) => this.start(id)))
  }

  /** Starts agent `id` (port 0 the first time; its old port on a restart). */
  async start(id: string): Promise<AgentHandle> {
    const existing = this.agents.get(id)
    if (existing?.alive) throw new Error(`agent ${id} is already running`)
    const dir = join(this.options.root, id)
    const config: AgentConfig = { id, dir, port: existing?.port ?? 0 }
    const child = fork(AGENT, [JSON.stringify(config)], {
      execArgv: ['--import', TSX],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    })
    allChildren.add(child)
    const ready = await new Promise<ReadyEvent>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if ((message as ReadyEvent)?.event === 'ready') {
          child.off('exit', onExit)
          child.off('message', onMessage)
          resolve(message as ReadyEvent)
        }
      }
      const onExit = (code: number | null, signal: string | null) => reject(new Error(`agent ${id} exited before it was ready (${signal ?? code})`))
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
    const handle: AgentHandle = existing ?? { id, dir, url: ready.url, port: ready.port, incarnation: 0, child, alive: true, startupMs: 0 }
    handle.child = child
    handle.alive = true
    handle.url = ready.url
    handle.port = ready.port
    handle.incarnation++
    handle.startupMs = ready.startupMs
    this.agents.set(id, handle)
    child.on('message', (message) => this.onMessage(id, message as ResponseMessage))
    child.once('exit', (code, signal) => {
      allChildren.delete(child)
      if (handle.child !== child) return
      handle.alive = false
      for (const [rid, request] of this.pending) {
        if (request.agent !== id) continue
        this.pending.delete(rid)
        clearTimeout(request.timer)
        request.reject(new Error(`agent ${id} exited (${signal ?? code})`))
      }
    })
    return handle
  }

  private onMessage(id: string, message: ResponseMessage): void {
    if (typeof message?.rid !== 'number') return
    const request = this.pending.get(message.rid)
    if (!request || request.agent !== id) return
    this.pending.delete(message.rid)
    clearTimeout(request.timer)
    if (message.ok) request.resolve(message.result)
    else request.reject(new Error(`agent ${id}: ${message.error}`))
  }

  /** Sends a request to agent `id` and waits for its answer. */
  request<C extends Command>(id: string, cmd: C, args: Requests[C]['args'], timeoutMs = this.options.timeoutMs ?? 30_000): Promise<Requests[C]['result']> {
    const agent = this.agent(id)
    if (!agent.alive || !agent.child.connected) return Promise.reject(new Error(`agent ${id} is not running`))
    const rid = this.nextRid++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(rid)
        reject(new Error(`agent ${id}: no answer to ${cmd} within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(rid, { agent: id, resolve: resolve as (value: unknown) => void, reject, timer })
      agent.child.send({ rid, cmd, args }, (error) => {
        if (!error) return
        this.pending.delete(rid)
        clearTimeout(timer)
        reject(error)
      })
    })
  }

  /** The ids of running agents. */
  live(): string[] {
    return [...this.agents.values()].filter((agent) => agent.alive).map((agent) => agent.id)
  }

  /** Kills agent `id` with SIGKILL and waits until it is gone. */
  async kill(id: string): Promise<void> {
    const agent = this.agent(id)
    if (!agent.alive) return
    const gone = new Promise<void>((resolve) => agent.child.once('exit', () => resolve()))
    agent.child.kill('SIGKILL')
    await gone
  }

  /** Closes every agent (each flushes and exits), killing any that does not within `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    await Promise.all(
      [...this.agents.values()]
        .filter((agent) => agent.alive)
        .map(async (agent) => {
          const gone = new Promise<void>((resolve) => {
            if (agent.child.exitCode !== null || agent.child.signalCode !== null) resolve()
            else agent.child.once('exit', () => resolve())
          })
          const timer = setTimeout(() => agent.child.kill('SIGKILL'), graceMs)
          this.request(agent.id, 'close', {}, graceMs).catch(() => agent.child.kill('SIGKILL'))
          await gone
          clearTimeout(timer)
        }),
    )
  }
}
