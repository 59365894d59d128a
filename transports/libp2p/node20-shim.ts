/**
 * Node 20 shim, imported (for its effect) by the libp2p transport's modules
 * before libp2p runs, so that nobody has to load it: `createPeer`, the CLI
 * and `concord-crdt/transports/libp2p` apply it themselves.
 *
 * libp2p 3 and its transports are written for Node 22 / browsers and expect:
 * - `Promise.withResolvers` (ES2024; Node 22+), used by libp2p's internals;
 * - a global `WebSocket` constructor (Node 22+ has one), used by
 *   `@libp2p/websockets`; we take the one from the `ws` package.
 * On Node 22+ both exist and this module changes nothing.
 */
import { WebSocket as WsWebSocket } from 'ws'

type Resolvers<T> = { promise: Promise<T>; resolve: (value: T | PromiseLike<T>) => void; reject: (reason?: unknown) => void }

const PromiseCtor = Promise as unknown as { withResolvers?: <T>() => Resolvers<T> }
if (typeof PromiseCtor.withResolvers !== 'function') {
  PromiseCtor.withResolvers = function withResolvers<T>(): Resolvers<T> {
    let resolve!: Resolvers<T>['resolve']
    let reject!: Resolvers<T>['reject']
    const promise = new Promise<T>((res, rej) => {
      resolve = res
      reject = rej
    })
    return { promise, resolve, reject }
  }
}

const globals = globalThis as unknown as { WebSocket?: unknown }
if (typeof globals.WebSocket === 'undefined') {
  globals.WebSocket = WsWebSocket
}
