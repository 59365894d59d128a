/**
 * The bytes an Automerge replica can rebuild its document from when the
 * wasm module it lives in fails (automerge-runtime.ts): the document as
 * last saved, and every change applied since (local changes and remote
 * deltas, as bytes). `A.load` of their concatenation is the document.
 *
 * Memory: the saved document is Automerge's compressed format (a small
 * fraction of the document in wasm memory); the changes since are compacted
 * into a new save once they outgrow it (and at least 256 KiB), so the
 * journal stays within about twice the saved size and each byte is saved
 * O(1) times on average.
 */
import * as A from '@automerge/automerge/slim'
import { mergeAutomergeDeltas } from './merge-deltas.ts'

/** Journal bytes below which no compaction is done. */
const MIN_COMPACT_BYTES = 256 * 1024

/** The saved document plus the changes applied since. */
export class AutomergeJournal {
  private saved: Uint8Array
  private changes: Uint8Array[] = []
  private changeBytes = 0

  constructor(saved: Uint8Array = new Uint8Array(0)) {
    this.saved = saved
  }

  /** Starts again from a whole document. */
  reset(saved: Uint8Array): void {
    this.saved = saved
    this.changes = []
    this.changeBytes = 0
  }

  /**
   * Adds bytes that were just applied to `doc` (a copy: they may be a view
   * into a larger buffer); compacts into a save of `doc` when due.
   */
  add(bytes: Uint8Array, doc: A.Doc<unknown>): void {
    this.changes.push(bytes.slice())
    this.changeBytes += bytes.length
    if (this.changeBytes <= Math.max(MIN_COMPACT_BYTES, this.saved.length)) return
    try {
      this.reset(A.save(doc))
    } catch {
      // Automerge failed saving (its module is recovered by the next call that fails): keep the changes.
    }
  }

  /** Bytes held (for statistics and tests). */
  get bytes(): number {
    return this.saved.length + this.changeBytes
  }

  /** The document again, in the current wasm module, with `actor` (throws what Automerge throws). */
  rebuild<T>(actor: string): A.Doc<T> {
    const parts = this.saved.length > 0 ? [this.saved, ...this.changes] : this.changes
    if (parts.length === 0) return A.init<T>({ actor })
    return A.load<T>(parts.length === 1 ? parts[0] : mergeAutomergeDeltas(parts), { actor })
  }
}
