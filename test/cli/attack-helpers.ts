/**
 * Helpers of the adversarial suites: a real `concord serve` child process
 * (its URL, its RSS from /proc) and a pair of legitimate peers whose writes
 * must keep flowing through the server while an attack runs. The raw
 * attackers are in test/helpers/raw-client.ts.
 */
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { createPeer, type Peer } from '../../peer/index.ts'
import { until } from '../helpers/wait.ts'
import { spawnConcord } from './helpers.ts'

/** A running `concord serve`. */
export interface Server {
  readonly child: ChildProcess
  readonly url: string
  readonly port: number
  /** What it printed on stderr so far. */
  stderr(): string
  /** Its resident set size now, in MiB. */
  rssMiB(): Promise<number>
  /** Whether it still runs. */
  alive(): boolean
  /** SIGTERM, then the exit code (SIGKILL if it does not stop within 20 s). */
  stop(): Promise<number | null>
}

/** Starts `concord serve --dir DIR --port 0 --json ...args` and waits for its URL. */
export async function startServe(dir: string, args: readonly string[] = []): Promise<Server> {
  const child = spawnConcord(['serve', '--dir', dir, '--port', '0', '--json', ...args])
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr!.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = once(child, 'exit')
  await until(() => stdout.includes('\n') || child.exitCode !== null, 'serve prints its address', 30_000)
  if (!stdout.includes('\n')) throw new Error(`serve did not start: ${stderr}`)
  const info = JSON.parse(stdout.split('\n')[0]) as { url: string; port: number }
  return {
    child,
    url: info.url,
    port: info.port,
    stderr: () => stderr,
    rssMiB: async () => Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      const [code] = await exited
      clearTimeout(timer)
      return code as number | null
    },
  }
}

/** Two legitimate peers connected through the server, syncing only `name`. */
export interface LegitPair {
  readonly writer: Peer
  readonly reader: Peer
  /** Writes once more on the writer and resolves when the reader holds it (fails after `timeoutMs`). */
  roundTrip(timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/** Connects a writer and a reader (tokens per peer, or one shared) that sync the counter `name`. */
export async function legitPair(url: string, tokens: { writer: string; reader: string }, name = 'legit'): Promise<LegitPair> {
  const writer = await createPeer({ agentId: 'writer', auth: { token: tokens.writer }, names: { names: [name] } })
  const reader = await createPeer({ agentId: 'reader', auth: { token: tokens.reader }, names: { names: [name] } })
  await writer.connect(url)
  await reader.connect(url)
  const mine = await writer.counter(name)
  const theirs = await reader.counter(name)
  let expected = 0
  return {
    writer,
    reader,
    roundTrip: async (timeoutMs = 15_000) => {
      mine.increment()
      expected++
      await until(() => theirs.value() >= expected, `the reader gets write ${expected} through the server`, timeoutMs)
    },
    close: async () => {
      await Promise.all([writer.close(), reader.close()])
    },
  }
}
