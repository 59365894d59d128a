/**
 * A dot: the unique id of one event, `(replica, counter)` with counter >= 1,
 * the counter counting the events of that replica.
 */

/** One event's id. */
export interface Dot {
  readonly replica: string
  readonly counter: number
}

/** Makes a dot. */
export function dot(replica: string, counter: number): Dot {
  return { replica, counter }
}

/** Orders dots by agent id (UTF-16 code units), then counter: the canonical encoding order. */
export function compareDots(a: Dot, b: Dot): number {
  if (a.replica !== b.replica) return a.replica < b.replica ? -1 : 1
  return a.counter - b.counter
}

/** Orders strings by UTF-16 code units (the canonical order of agent ids and keys). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** `replica:counter`, for messages and debugging. */
export function formatDot(d: Dot): string {
  return `${d.replica}:${d.counter}`
}
