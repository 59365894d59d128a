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

/** Collects one update's dependencies against a document's struct store. */
export class YjsDependencies implements YjsDependencyCollector {
  /** Unmet references: client -> the clock its state must reach. */
  private readonly needs = new Map<number, number>()
  /** The update's runs, in reused arrays (no allocation per update). */
  private runs = 0
  private readonly runClient: number[] = []
  private readonly runAttach: number[] = []
  private readonly runEnd: number[] = []
  private readonly runAttaches: boolean[] = []
  private store: Y.Doc['store'] | undefined

  /** `doc`: the document the updates are judged against (or give it to {@link reset}). */
  constructor(doc?: Y.Doc) {
    this.store = doc?.store
  }

  /** Starts a new update (against `doc` from now on, when given). */
  reset(doc?: Y.Doc): void {
    if (doc !== undefined) this.store = doc.store
    if (this.needs.size > 0) this.needs.clear()
    this.runs = 0
  }

  /** Lets the document go (an object shared by many documents holds none between updates). */
  release(): void {
    this.store = undefined
  }

  need(client: number, clock: number): void {
    if (getState(this.store!, client) >= clock) return
    const known = this.needs.get(client)
    if (known === undefined || known < clock) this.needs.set(client, clock)
  }

  run(client: number, _start: number, attach: number, end: number): void {
    const i = this.runs++
    this.runClient[i] = client
    this.runAttach[i] = attach
    this.runEnd[i] = end
    this.runAttaches[i] = getState(this.store!, client) >= attach
  }

  /** The clients whose structs the update holds (their state moves when it integrates). */
  clients(): number[] {
    return this.runClient.slice(0, this.runs)
  }

  private runOf(client: number): number {
    for (let i = 0; i < this.runs; i++) if (this.runClient[i] === client) return i
    return -1
  }

  /**
   * The update's unmet requirements (`[client, clock]`: the document's state
   * of `client` must reach `clock`), or `undefined` when it can integrate now.
   */
  unmet(): Array<[number, number]> | undefined {
    let out: Array<[number, number]> | undefined
    for (let i = 0; i < this.runs; i++) {
      if (this.runAttaches[i]) continue
      const need = this.needs.get(this.runClient[i])
      const threshold = need !== undefined && need > this.runEnd[i] ? need : this.runAttach[i]
      ;(out ??= []).push([this.runClient[i], threshold])
    }
    if (this.needs.size === 0) return out
    for (const [client, need] of this.needs) {
      const i = this.runOf(client)
      if (i < 0) (out ??= []).push([client, need])
      else if (this.runAttaches[i] && need > this.runEnd[i]) (out ??= []).push([client, need])
    }
    return out
  }
}
