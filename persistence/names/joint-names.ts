/**
 * Which names were ever in a unit of several names (an `atomic` block over
 * several names, a remote commit of several that came as one), so that an
 * anti-entropy answer can split everything else into small bundles and
 * keep those together (sync/answer-bundles.ts): a transaction is then never
 * half applied on a receiver that stops between bundles.
 *
 * A name is marked once, by a key written in the batch of its first such
 * unit (`j/<name>`, FORMAT.md), and stays marked (the merged state an
 * answer sends holds every change it ever had) until it is deleted. A
 * folder marks its names only if it did from its creation (the
 * `s/joint` key): in any other, every name counts as joint.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { JOINT_MARKER, JOINT_PREFIX, JOINT_TRACKED_KEY, jointKey } from '../format/keys.ts'
import type { BatchBuilder } from '../pipeline/committer.ts'
import type { Storage } from '../storage/storage.ts'

/** @internal the joint names of a store (see the module comment). */
export class JointNames {
  /** Names whose marker is written (by this process, or read from storage). */
  private readonly written = new Set<string>()
  /**
   * Names that are joint: {@link written}, and those of units queued and
   * not yet written (a unit's names count as soon as it is applied, before
   * its batch: an answer computed meanwhile already holds its changes).
   */
  private readonly marked = new Set<string>()
  /** The folder's markers, once read (with whether it marks at all). */
  private loading: Promise<boolean> | undefined

  constructor(private readonly storage: Storage) {}

  /** The names of a unit of several, applied and queued now: joint from now on (their markers go with the unit, {@link write}). */
  note(names: Iterable<string>): void {
    for (const name of names) this.marked.add(name)
  }

  /** Adds to `b`, the batch of a unit of several `names`, the markers not yet written. */
  write(b: BatchBuilder, names: Iterable<string>): void {
    const fresh: string[] = []
    for (const name of names) if (!this.written.has(name)) fresh.push(name)
    if (fresh.length === 0) return
    for (const name of fresh) b.put(jointKey(name), JOINT_MARKER)
    b.onCommit(() => {
      for (const name of fresh) this.written.add(name)
    })
  }

  /** `name` was deleted: its marker goes with it (the caller deletes the key in the same batch). */
  forget(name: string): void {
    this.marked.delete(name)
    this.written.delete(name)
  }

  /**
   * Resolves whether a name may share a unit with another: marked, or any
   * name of a folder that did not mark from its creation. Reads the
   * markers once.
   */
  async tester(): Promise<(name: string) => boolean> {
    this.loading ??= this.load()
    let tracked: boolean
    try {
      tracked = await this.loading
    } catch (error) {
      this.loading = undefined
      throw error
    }
    if (!tracked) return () => true
    return (name) => this.marked.has(name)
  }

  private async load(): Promise<boolean> {
    const tracked = await this.storage.get(JOINT_TRACKED_KEY)
    if (tracked === undefined) return false
    if (tracked.length !== 1 || tracked[0] !== JOINT_MARKER[0]) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, 'joint names: unknown marker format')
    for await (const key of this.storage.keys({ prefix: JOINT_PREFIX })) {
      if (key.length !== 2) continue
      this.written.add(key[1])
      this.marked.add(key[1])
    }
    return true
  }
}
