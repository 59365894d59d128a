/**
 * A contender's process: the parent forks `bench/peers/main.ts` with a role
 * (plain data) and talks to it by request and reply over IPC. Each request
 * carries an id; the child answers `{ id, ok: true, ...result }` or
 * `{ id, error }`. Every contender of the peer benchmarks runs in processes
 * of its own, so no contender pays for another's garbage or event loop.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fork, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url))

/** A forked contender process. */
export interface ContenderProcess {
  readonly pid: number
  /** Sends `message` and resolves with the child's reply (rejects on `{ error }`, on exit, or after `timeoutMs`). */
  request<T = Record<string, unknown>>(message: Record<string, unknown>, timeoutMs?: number): Promise<T>
  /** Asks the child to close and waits for it to exit (kills it, by pid, after `graceMs`). */
  close(graceMs?: number): Promise<void>
}

/** Forks a contender process playing `role`; `execArgv` adds Node flags (e.g. `--cpu-prof`). */
export function spawnContender(role: Record<string, unknown>, options: { execArgv?: string[]; env?: NodeJS.ProcessEnv } = {}): ContenderProcess {
  const child: ChildProcess = fork(MAIN, [JSON.stringify(role)], {
    execArgv: ['--import', TSX, ...(options.execArgv ?? [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: options.env ?? process.env,
  })
  const label = String(role.kind)
  let nextId = 0
  let exitCode: number | null | undefined
  const pending = new Map<number, { resolve: (value: never) => void; reject: (error: Error) => void; timer?: NodeJS.Timeout }>()
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code) => {
      exitCode = code
      for (const waiter of pending.values()) {
        clearTimeout(waiter.timer)
        waiter.reject(new Error(`the ${label} process exited (code ${code})`))
      }
      pending.clear()
      resolve()
    })
  })
  child.on('message', (reply: { id?: number; error?: string }) => {
    const waiter = reply.id === undefined ? undefined : pending.get(reply.id)
    if (!waiter) return
    pending.delete(reply.id!)
    clearTimeout(waiter.timer)
    if (typeof reply.error === 'string') waiter.reject(new Error(`${label}: ${reply.error}`))
    else waiter.resolve(reply as never)
  })
  return {
    pid: child.pid ?? -1,
    request<T>(message: Record<string, unknown>, timeoutMs = 300_000): Promise<T> {
      if (exitCode !== undefined) return Promise.reject(new Error(`the ${label} process has exited (code ${exitCode})`))
      const id = nextId++
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id)
          reject(new Error(`${label}: no answer to ${Object.keys(message).join(',')} within ${timeoutMs} ms`))
        }, timeoutMs)
        pending.set(id, { resolve: resolve as (value: never) => void, reject, timer })
        child.send({ ...message, id })
      })
    },
    async close(graceMs = 10_000) {
      if (exitCode !== undefined) return
      await this.request({ close: true }, graceMs).catch(() => undefined)
      if (child.connected) child.disconnect()
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }
}

/** The child side: answers each request with `handle`'s result; `close` ends the process once handled. */
export function serveRequests(handle: (message: Record<string, unknown>) => Promise<Record<string, unknown> | undefined>): void {
  process.on('disconnect', () => process.exit(0))
  process.on('message', async (message: Record<string, unknown>) => {
    const id = message.id
    try {
      const result = (await handle(message)) ?? {}
      process.send!({ ...result, id, ok: true })
      if (message.close) setImmediate(() => process.exit(0))
    } catch (error) {
      process.send!({ id, error: (error as Error)?.stack ?? String(error) })
    }
  })
}

/** Monotonic milliseconds, comparable across the processes of one machine (CLOCK_MONOTONIC). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

/**
 * CPU time of this process's threads, ms (user + system), from
 * /proc/self/task (Linux; zeros elsewhere): `main` the event loop,
 * `helpers` every other thread (V8's concurrent GC and optimizing compiler,
 * the libuv pool; Node 20 names them all "node").
 */
export function threadCpuMs(): { main: number; helpers: number } {
  const out = { main: 0, helpers: 0 }
  const msPerTick = 1000 / 100 // USER_HZ is 100 on Linux
  let tasks: string[]
  try {
    tasks = readdirSync('/proc/self/task')
  } catch {
    return out
  }
  for (const tid of tasks) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out[Number(tid) === process.pid ? 'main' : 'helpers'] += (Number(fields[11]) + Number(fields[12])) * msPerTick
    } catch {
      // the thread ended
    }
  }
  return out
}

/** CPU time this process used, ms (user + system), and its peak RSS, MiB. */
export function processUsage(): { cpuMs: number; peakRssMiB: number } {
  const usage = process.resourceUsage()
  return { cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000, peakRssMiB: usage.maxRSS / 1024 }
}
