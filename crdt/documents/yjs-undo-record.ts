/** The undo record of a YjsReplica (`recordUndo`, see yjs-replica.ts): a Y.UndoManager over the whole document. */
import type * as Y from 'yjs'
import type { UndoRecord } from '../replica.ts'

/** A set that holds everything: a Y.UndoManager given one tracks transactions of any origin. */
export class EveryOrigin extends Set<unknown> {
  override has(): boolean {
    return true
  }
}

/** Changes of a YjsReplica recorded to be undone (see YjsReplica.recordUndo). */
export class YjsUndoRecord implements UndoRecord {
  private done = false

  constructor(
    private readonly manager: Y.UndoManager,
    private readonly undone: (manager: Y.UndoManager) => void,
  ) {}

  /** A compensating transaction: false (the document keeps the undone structs, deleted). */
  undo(): boolean {
    if (!this.done) {
      this.done = true
      this.undone(this.manager)
    }
    return false
  }

  release(): void {
    if (this.done) return
    this.done = true
    this.manager.clear()
    this.manager.destroy()
  }
}
