/**
 * The process side of the crash tests: runs a writer fixture in a child
 * process, collects the numbers it reports as `ack N` lines on stdout, and
 * kills it with SIGKILL `delayMs` after its first line that `armsOn` accepts.
 */
import { spawn } from 'node:child_process'

/** Runs `fixture` with `args` until killed; resolves with every acknowledged number, in order. Rejects if it exits by itself. */
export function runAndKill(fixture: string, args: readonly string[], delayMs: number, armsOn: (line: string) => boolean): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const acked: number[] = []
    let buffer = ''
    let stderr = ''
    let timer: NodeJS.Timeout | undefined
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      const lines = buffer.split('\n')
      buffer = lines.pop()!
      for (const line of lines) {
        const match = /^ack (\d+)$/.exec(line)
        if (match) acked.push(Number(match[1]))
        if (timer === undefined && armsOn(line)) timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8')
    })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (signal !== 'SIGKILL') reject(new Error(`writer exited by itself (code ${code}): ${stderr}`))
      else resolve(acked)
    })
  })
}
