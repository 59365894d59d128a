/**
 * A store's seal on the folder it opened (lifecycle/seal.ts): compared with
 * what LevelDB holds on open, its losses reported once the caller holds the
 * store, and written again on a clean close from the names written since.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import type { Names } from '../names/owner.ts'
import { afterThisTurn } from '../turn.ts'
import { checkSeal, SealChanges, writeSeal, type Loss } from './seal.ts'

/** @internal the store's seal (persistence/store.ts). */
export class StoreSeal {
  /** The names written since the open, for the seal of the close. */
  readonly changes = new SealChanges()
  /** Only a store whose seal was checked writes one on close: else it could cover up a loss not yet recorded. */
  private checked = false

  /** `dir`: the folder of a store that opened its own storage; undefined: no seal. */
  constructor(
    private readonly context: StoreContext,
    private readonly owner: Names,
    private readonly dir: string | undefined,
  ) {
    context.committer.observeWrites(this.changes)
  }

  /** On open: the losses the seal shows, each reported by a `lost` and an `error` event after this turn. */
  async check(): Promise<Loss[]> {
    if (this.dir === undefined) return []
    const found = await checkSeal(this.context, this.owner, this.dir, this.changes)
    this.checked = true
    if (found.length === 0) return found
    // Reported once the caller holds the store (it subscribes right after open resolves).
    const { events } = this.context
    afterThisTurn(() => {
      for (const loss of found) {
        events.emit('lost', loss)
        const what = loss.fromSeq === 1 ? 'the whole name is missing' : `records ${loss.fromSeq}..${loss.toSeq} are missing`
        events.emit('error', {
          name: loss.name,
          error: new ConcordError(
            ErrorCodes.CORRUPT_RECORD,
            `"${loss.name}": ${what}, although they were written before the last clean close (LevelDB lost the end of its log); peers resend what they hold, or restore the folder from a backup; \`concord repair\` accepts the loss`,
          ),
        })
      }
    })
    return found
  }

  /** On a clean close, everything written: the seal records it (a failure leaves a stale seal, which says nothing). */
  async write(): Promise<void> {
    if (this.dir === undefined || !this.checked) return
    await writeSeal(this.context, this.owner, this.dir, this.changes).catch(() => undefined)
  }
}
