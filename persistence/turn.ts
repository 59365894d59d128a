/**
 * Running something once the current turn of the event loop is over (after
 * the pending promise callbacks and I/O events): Node's `setImmediate`, and
 * in a browser, which has none, a `MessageChannel` message (a task of its
 * own, not clamped to 4 ms as nested `setTimeout(0)`s are).
 */

/** The part of a MessagePort used here (persistence/ compiles without the DOM library). */
interface PortLike {
  onmessage: (() => void) | null
  postMessage(message: unknown): void
}

function messageChannelTurn(): (callback: () => void) => void {
  const queue: Array<() => void> = []
  let port: PortLike | undefined
  return (callback) => {
    if (!port) {
      const Channel = (globalThis as unknown as { MessageChannel?: new () => { port1: PortLike; port2: PortLike } }).MessageChannel
      if (!Channel) {
        setTimeout(callback, 0)
        return
      }
      const channel = new Channel()
      channel.port1.onmessage = () => queue.shift()?.()
      port = channel.port2
    }
    queue.push(callback)
    port.postMessage(0)
  }
}

/** Calls `callback` once the current turn is over. */
export const afterThisTurn: (callback: () => void) => void =
  typeof setImmediate === 'function'
    ? (callback) => {
        setImmediate(callback)
      }
    : messageChannelTurn()
