/**
 * A minimal typed event emitter (Node's EventEmitter is not allowed in
 * crdt/, which must run in a browser). A throwing listener never breaks the
 * emitter or the other listeners; the error is reported to `onListenerError`.
 */

/** Removes the listener it was returned for. */
export type Unsubscribe = () => void

/** Typed emitter over an event map `{ eventName: payload }`. */
export class Emitter<Events extends Record<string, unknown>> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>()

  /** Called when a listener throws; defaults to `console.error` (assign another to an emitter to replace it). */
  onListenerError(error: unknown, event: keyof Events): void {
    console.error(`concord: a '${String(event)}' listener threw`, error)
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): Unsubscribe {
    let set = this.listeners.get(event)
    if (!set) this.listeners.set(event, (set = new Set()))
    set.add(listener as (payload: never) => void)
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
    const set = this.listeners.get(event)
    if (!set) return
    if (set.delete(listener as (payload: never) => void)) return
    for (const entry of set) {
      if ((entry as { original?: unknown }).original === listener) {
        set.delete(entry)
        return
      }
    }
  }

  /** Number of listeners for an event. */
  listenerCount(event: keyof Events): number {
    return this.listeners.get(event)?.size ?? 0
  }

  /** Calls every listener of `event` with `payload`. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.listeners.get(event)
    if (!set) return
    for (const listener of [...set]) {
      try {
        ;(listener as (payload: Events[K]) => void)(payload)
      } catch (error) {
        this.onListenerError(error, event)
      }
    }
  }
}
