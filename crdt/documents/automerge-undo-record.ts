/**
 * The undo record of an AutomergeReplica (`recordUndo`, see
 * automerge-replica.ts): the heads it started at, which `undo` goes back to.
 */
import type * as A from '@automerge/automerge/slim'
import type { UndoRecord } from '../replica.ts'

/** An undo record of an Automerge replica (see `AutomergeReplica.recordUndo`). */
export class AutomergeUndoRecord implements UndoRecord {
  private done = false

  constructor(
    private readonly replica: { undoTo(record: AutomergeUndoRecord, heads: A.Heads): void; releaseUndo(record: AutomergeUndoRecord): void },
    private readonly heads: A.Heads,
  ) {}

  undo(): boolean {
    if (!this.done) {
      this.done = true
      this.replica.undoTo(this, this.heads)
    }
    return true
  }

  release(): void {
    if (this.done) return
    this.done = true
    this.replica.releaseUndo(this)
  }
}
