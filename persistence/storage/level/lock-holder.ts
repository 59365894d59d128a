/**
 * Who holds a LevelDB folder: LevelDB locks `<dir>/LOCK` with a POSIX
 * record lock (fcntl), which Linux lists in `/proc/locks` with the holder's
 * pid, matched here by the LOCK file's device and inode; the holder's command
 * line comes from `/proc/<pid>/cmdline`. Elsewhere (no /proc) it is unknown.
 */
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'

/** The process holding a folder's lock. */
export interface LockHolder {
  readonly pid: number
  /** Its command line (shortened), when readable. */
  readonly command?: string
}

/** The major and minor device numbers of a `stat().dev` (glibc's encoding). */
function deviceNumbers(dev: number): { major: number; minor: number } {
  const high = Math.floor(dev / 2 ** 32)
  const low = dev >>> 0
  const major = ((low >>> 8) & 0xfff) | (high & ~0xfff)
  const minor = (low & 0xff) | ((low >>> 12) & ~0xff) | ((high & 0xfff) << 20)
  return { major: major >>> 0, minor: minor >>> 0 }
}

/** The process holding the lock of the LevelDB folder `dir`, or undefined when it cannot be told. */
export async function lockHolder(dir: string): Promise<LockHolder | undefined> {
  try {
    const info = await stat(join(dir, 'LOCK'))
    const { major, minor } = deviceNumbers(info.dev)
    const locks = await readFile('/proc/locks', 'utf8')
    for (const line of locks.split('\n')) {
      // "1: POSIX  ADVISORY  WRITE 12345 fe:00:2319742 0 EOF"
      const fields = line.trim().split(/\s+/)
      const [maj, min, ino] = (fields[5] ?? '').split(':')
      if (ino !== String(info.ino) || parseInt(maj, 16) !== major || parseInt(min, 16) !== minor) continue
      const pid = Number(fields[4])
      if (!Number.isSafeInteger(pid) || pid <= 0) continue
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
      const command = cmdline.split('\0').filter(Boolean).join(' ')
      return command.length > 0 ? { pid, command: command.length > 160 ? `${command.slice(0, 157)}...` : command } : { pid }
    }
  } catch {
    // no /proc (not Linux), or the folder vanished: unknown
  }
  return undefined
}

/** "another process (pid 123: node serve ...)" or "this process (pid 9, ...)" for a lock error. */
export async function describeLockHolder(dir: string): Promise<string> {
  const holder = await lockHolder(dir)
  if (!holder) return 'another process'
  if (holder.pid === process.pid) return describeThisProcess()
  return `another process (pid ${holder.pid}${holder.command ? `: ${holder.command}` : ''})`
}

/** "this process (pid 9: ...)": the folder is open in another store of this process. */
export function describeThisProcess(): string {
  return `this process (pid ${process.pid}: another store in it has the folder open)`
}
