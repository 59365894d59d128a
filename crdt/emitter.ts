/**
 * A minimal typed event emitter (Node's EventEmitter is not allowed in
 * crdt/, which must run in a browser). A throwing listener never breaks the
 * emitter or the other listeners; the error is reported to `onListenerError`.
 */

/** Removes the listener it was returned for. */
export type Unsubscribe = () => void

type Listener = (payload: never) => void

/** Typed emitter over an event map `{ eventName: payload }`. */
export class Emitter<Events extends Record<string, unknown>> {
  /**
   * The listeners of each event, in the order added. An array is replaced,
   * never changed, when a listener comes or goes: `emit` walks the one it
   * found (a listener added meanwhile runs from the next emit, one removed
   * meanwhile still runs in this one) without copying it. The first event
   * listened to has these two fields, the others a map made when needed: a
   * replica's emitter (one per hydrated name) has one event, `change`.
   */
  private firstEvent: keyof Events | undefined
  private firstListeners: readonly Listener[] | undefined
  private otherListeners: Map<keyof Events, readonly Listener[]> | undefined

  private listenersOf(event: keyof Events): readonly Listener[] | undefined {
    return this.firstEvent === event ? this.firstListeners : this.otherListeners?.get(event)
  }

  /** Sets the listeners of `event` (undefined: none). */
  private setListeners(event: keyof Events, list: readonly Listener[] | undefined): void {
    if (this.firstEvent === event) {
      this.firstListeners = list
      if (list === undefined) this.firstEvent = undefined
    } else if (list === undefined) {
      this.otherListeners?.delete(event)
    } else if (this.firstEvent === undefined && !this.otherListeners?.has(event)) {
      this.firstEvent = event
      this.firstListeners = list
    } else {
      ;(this.otherListeners ??= new Map()).set(event, list)
    }
  }

  /** Called when a listener throws; defaults to `console.error` (assign another to an emitter to replace it). */
  onListenerError(error: unknown, event: keyof Events): void {
    console.error(`concord: a '${String(event)}' listener threw`, error)
  }

  /** Adds a listener (once: adding it again does nothing); returns a function that removes it. */
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): Unsubscribe {
    const list = this.listenersOf(event)
    if (list === undefined) this.setListeners(event, [listener as Listener])
    else if (!list.includes(listener as Listener)) this.setListeners(event, [...list, listener as Listener])
    return () => this.off(event, listener)
  }

  /** Adds a listener that runs once (`off(event, listener)` removes it too). */
  once<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): Unsubscribe {
    const wrapper = Object.assign(
      (payload: Events[K]) => {
        unsubscribe()
        listener(payload)
      },
      { original: listener },
    )
    const unsubscribe = this.on(event, wrapper)
    return unsubscribe
  }

  /** Removes a listener (one added with `on` or `once`). */
  off<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): void {
    const list = this.listenersOf(event)
    if (list === undefined) return
    let at = list.indexOf(listener as Listener)
    if (at < 0) at = list.findIndex((entry) => (entry as { original?: unknown }).original === listener)
    if (at < 0) return
    this.setListeners(event, list.length === 1 ? undefined : list.filter((_, i) => i !== at))
  }

  /** Number of listeners for an event. */
  listenerCount(event: keyof Events): number {
    return this.listenersOf(event)?.length ?? 0
  }

  /** Calls every listener of `event` with `payload`. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const list = this.listenersOf(event)
    if (list === undefined) return
    for (const listener of list) {
      try {
        ;(listener as (payload: Events[K]) => void)(payload)
      } catch (error) {
        this.onListenerError(error, event)
      }
    }
  }
}
