/**
 * The part of the WHATWG `WebSocket` the browser transport uses, typed here
 * so that transports/ needs no DOM library: the browser's own, Node 22's
 * global `WebSocket`, and `ws`'s class (its browser-compatible interface)
 * all have it.
 */

/** The events the transport listens to, with the fields it reads. */
export interface WebSocketLikeEvents {
  open: unknown
  message: { readonly data: unknown }
  error: unknown
  close: { readonly code: number; readonly reason: string }
}

/** A WHATWG WebSocket, as far as the transport uses it. */
export interface WebSocketLike {
  binaryType: string
  readonly readyState: number
  readonly bufferedAmount: number
  send(data: Uint8Array): void
  close(code?: number, reason?: string): void
  addEventListener<K extends keyof WebSocketLikeEvents>(type: K, listener: (event: WebSocketLikeEvents[K]) => void): void
  removeEventListener<K extends keyof WebSocketLikeEvents>(type: K, listener: (event: WebSocketLikeEvents[K]) => void): void
}

/** `new WebSocket(url)`. */
export type WebSocketLikeConstructor = new (url: string) => WebSocketLike

/** `readyState` values (the same in every implementation). */
export const OPEN = 1
export const CLOSED = 3

/** The global `WebSocket` of this context (a browser's; Node 22+ has one too), or undefined. */
export function globalWebSocket(): WebSocketLikeConstructor | undefined {
  const candidate = (globalThis as { WebSocket?: unknown }).WebSocket
  return typeof candidate === 'function' ? (candidate as WebSocketLikeConstructor) : undefined
}

const encoder = new TextEncoder()

/** `reason` cut to the 123 bytes of UTF-8 a close frame may carry, at a character boundary. */
export function closeReason(reason: string | undefined): string {
  let text = reason ?? ''
  while (encoder.encode(text).length > 123) text = text.slice(0, -1)
  return text.replace(/[\uD800-\uDBFF]$/, '')
}
