/** Test helpers for the CLI: in-process runs with captured output, real `concord` processes, a fixture folder. */
import { spawn, type ChildProcess } from 'node:child_process'
import { Writable, Readable } from 'node:stream'
import { createPeer } from '../../peer/index.ts'
import { runCli, type RunOptions } from '../../cli/program.ts'

/** What a CLI run printed and returned. */
export interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  /** stdout as bytes (binary export). */
  readonly bytes: Uint8Array
}

function sink(chunks: Buffer[]): Writable {
  return new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
      callback()
    },
  })
}

/**
 * Runs `concord ...argv` in this process (no TTY: no progress bars).
 * `interactive`: as if a person at a terminal answers questions (`input` is what they type).
 */
export async function cli(argv: string[], options: RunOptions & { input?: Uint8Array | string; interactive?: boolean } = {}): Promise<CliRun> {
  const out: Buffer[] = []
  const err: Buffer[] = []
  const code = await runCli(
    argv,
    { stdout: sink(out), stderr: sink(err), progress: false, interactive: options.interactive },
    {
      ...options,
      stdin: options.input !== undefined ? () => Readable.from([Buffer.from(options.input!)]) : options.stdin,
    },
  )
  const bytes = Buffer.concat(out)
  return { code, stdout: bytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), bytes: new Uint8Array(bytes) }
}

/** Runs `cli(argv)` with `--json` and parses stdout. */
export async function cliJson<T = any>(argv: string[]): Promise<{ code: number; json: T; stderr: string }> {
  // eslint-disable-line @typescript-eslint/no-explicit-any
  const run = await cli([...argv, '--json'])
  return { code: run.code, json: JSON.parse(run.stdout) as T, stderr: run.stderr }
}

/** Starts the real `concord` command (cli/main.ts, through tsx) as a child process. */
export function spawnConcord(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
}

/** Runs the real `concord` to completion. */
export function runConcord(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnConcord(args)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr!.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Writes a folder as agent "alice" would: every kind of name, several records each. */
export async function makeFixture(dir: string): Promise<void> {
  // One record per change (mergeLocal 'async'): history, at and revert have steps to show.
  const peer = await createPeer({ agentId: 'alice', dir, mergeLocal: 'async' })
  try {
    const tasks = await peer.counter('tasks')
    tasks.increment(3)
    tasks.increment(2)
    const seen = await peer.set<string>('seen')
    seen.add('a')
    seen.add('b')
    seen.delete('a')
    const plan = await peer.register<{ step: number }>('plan')
    plan.set({ step: 1 })
    plan.set({ step: 2 })
    plan.set({ step: 3 })
    const notes = await peer.yjs('notes')
    notes.doc.getText('t').insert(0, 'hello')
    const spec = await peer.automerge<{ items: string[] }>('spec')
    spec.change((doc) => {
      doc.items = ['x']
    })
    const facts = await peer.map('facts')
    facts.set('k', 'v')
    facts.counter('hits').increment(4)
    await peer.flush()
  } finally {
    await peer.close()
  }
}
