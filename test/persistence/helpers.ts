/** Test helpers for persistence: temp folders, deterministic timers, Yjs edits. */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import type { Replica } from '../../crdt/replica.ts'
import type { CommitTimers } from '../../persistence/pipeline/committer.ts'

/** A temp folder and its removal. */
export async function tempDir(prefix = 'concord-persist-'): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) }
}

/** Manually advanced timers and wall clock. */
export class FakeTimers implements CommitTimers {
  time = 1_000_000
  private next = 1
  private tasks = new Map<number, { at: number; fn: () => void }>()

  readonly now = (): number => this.time

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++
    this.tasks.set(id, { at: this.time + ms, fn })
    return id
  }

  clearTimeout(handle: unknown): void {
    this.tasks.delete(handle as number)
  }

  /** Number of scheduled tasks. */
  get scheduled(): number {
    return this.tasks.size
  }

  /** Advances time, running due tasks in time order. */
  advance(ms: number): void {
    const end = this.time + ms
    for (;;) {
      let dueId: number | undefined
      let due: { at: number; fn: () => void } | undefined
      for (const [id, task] of this.tasks)
        if (task.at <= end && (!due || task.at < due.at)) {
          dueId = id
          due = task
        }
      if (!due) break
      this.tasks.delete(dueId!)
      this.time = Math.max(this.time, due.at)
      due.fn()
    }
    this.time = end
  }
}

/** Appends text to the Yjs text `t` of a replica. */
export function typeText(replica: Replica, text: string): void {
  const ytext = (replica as YjsReplica).doc.getText('t')
  ytext.insert(ytext.length, text)
}

/** The Yjs text `t` of a replica. */
export function textOf(replica: Replica): string {
  return (replica as YjsReplica).doc.getText('t').toString()
}

/** Lets pending promise callbacks run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve))
}
