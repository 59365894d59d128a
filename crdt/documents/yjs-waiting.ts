/**
 * What a Yjs update needs before it can integrate, told while the guard
 * walks it (yjs-guard.ts, {@link YjsDependencyCollector}), and judged
 * against the document's state vector.
 *
 * An update can integrate whole when, for every client `c`:
 * - its run of `c` (if any) attaches: the document holds `c` up to the run's
 *   start (or, past a skip range inside the run, up to the skip's end);
 * - every clock of `c` it references (origins, parents) or deletes exists:
 *   below the document's state of `c`, or inside the update's own run of `c`
 *   when that run attaches.
 * Otherwise it waits (waiting-room.ts) with one requirement per client:
 * "the document's state of `c` reaches this clock". The check costs nothing
 * for the common live update (references to existing structs or to its own
 * run allocate nothing); the maps are reused between updates.
 */
import * as Y from 'yjs'
import type { YjsDependencyCollector } from './yjs-guard.ts'

const getState = Y.getState

/** A client's run in the update: where it attaches, where it ends, whether it attaches now. */
interface Run {
  attach: number
  end: number
  attaches: boolean
}

/** Collects one update's dependencies against a document's struct store. */
export class YjsDependencies implements YjsDependencyCollector {
  /** Unmet references: client -> the clock its state must reach. */
  private readonly needs = new Map<number, number>()
  private readonly runs = new Map<number, Run>()
  private store: Y.Doc['store']

  constructor(doc: Y.Doc) {
    this.store = doc.store
  }

  /** Starts a new update. */
  reset(): void {
    this.needs.clear()
    this.runs.clear()
  }

  need(client: number, clock: number): void {
    if (getState(this.store, client) >= clock) return
    const known = this.needs.get(client)
    if (known === undefined || known < clock) this.needs.set(client, clock)
  }

  run(client: number, _start: number, attach: number, end: number): void {
    this.runs.set(client, { attach, end, attaches: getState(this.store, client) >= attach })
  }

  /** The clients whose structs the update holds (their state moves when it integrates). */
  clients(): number[] {
    return [...this.runs.keys()]
  }

  /**
   * The update's unmet requirements (`[client, clock]`: the document's state
   * of `client` must reach `clock`), or `undefined` when it can integrate now.
   */
  unmet(): Array<[number, number]> | undefined {
    let out: Array<[number, number]> | undefined
    for (const [client, run] of this.runs) {
      if (run.attaches) continue
      const need = this.needs.get(client)
      const threshold = need !== undefined && need > run.end ? need : run.attach
      ;(out ??= []).push([client, threshold])
    }
    for (const [client, need] of this.needs) {
      const run = this.runs.get(client)
      if (run === undefined) (out ??= []).push([client, need])
      else if (run.attaches && need > run.end) (out ??= []).push([client, need])
    }
    return out
  }
}
