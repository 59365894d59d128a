/**
 * Helpers of the packaging test: child processes with a deadline, an npm
 * environment that cannot reach back into this repository, and Node 24
 * fetched from the npm registry (the `node-<platform>-<arch>` package),
 * kept in the repository's gitignored .cache/ folder between runs.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'

/** What a finished process printed and returned. */
export interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `command args` to completion; kills it (and fails) after `timeoutMs`. */
export function run(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Run> {
  const timeoutMs = options.timeoutMs ?? 120_000
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${command} ${args.join(' ')}: no exit within ${timeoutMs} ms\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Fails with everything the process printed unless it exited with 0. */
export function assertOk(result: Run, what: string): Run {
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`)
  return result
}

/**
 * This process's environment without npm's `npm_*` variables (`npm test`
 * exports its own config: local prefix, package name, ...), which must not
 * leak into the npm and CLI runs of the temporary project, and without
 * NODE_TEST_CONTEXT (a nested `node --test` would report to this runner
 * instead of printing).
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key) && key !== 'INIT_CWD' && key !== 'NODE_TEST_CONTEXT') env[key] = value
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', ...extra }
}

/** The Node 24 release the package is tested under. */
export const NODE_24 = '24.22.3'

/**
 * The path of a Node 24 binary: from `<repo>/.cache/` if an earlier run
 * installed it, else installed there now with npm (about 53 MB to download,
 * 190 MB on disk). Undefined on a platform without such a package.
 */
export async function node24(repo: string): Promise<string | undefined> {
  const platform = process.platform === 'win32' ? 'win' : process.platform
  if (!['linux', 'darwin', 'win'].includes(platform) || !['x64', 'arm64'].includes(process.arch)) return undefined
  const name = `node-${platform}-${process.arch}`
  const home = join(repo, '.cache', `${name}-${NODE_24}`)
  const binary = join(home, 'node_modules', name, 'bin', platform === 'win' ? 'node.exe' : 'node')
  if (existsSync(binary)) return binary
  await mkdir(join(repo, '.cache'), { recursive: true })
  const staging = await mkdtemp(join(repo, '.cache', 'staging-'))
  try {
    assertOk(
      await run('npm', ['install', '--prefix', staging, '--no-save', '--no-package-lock', `${name}@${NODE_24}`], { cwd: staging, timeoutMs: 300_000 }),
      `npm install ${name}@${NODE_24}`,
    )
    // Another run may have finished first: keep whichever landed.
    await rename(staging, home).catch(async (error) => {
      if (!existsSync(binary)) throw error
    })
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
  return binary
}
