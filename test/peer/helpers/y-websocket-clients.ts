/**
 * Stock y-websocket clients for the peer suites: a `WebsocketProvider`
 * (y-websocket 3.1.0, unchanged) over a `ws` socket class that can send
 * headers (what a Node client can do) and records what happened on the wire
 * (upgrade refusals, the messages received), plus a raw HTTP upgrade that
 * returns the server's answer byte for byte.
 */
import { connect } from 'node:net'
import { WebSocket } from 'ws'
import type * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'

/** What one client's sockets saw. */
export interface WireLog {
  /** Errors of upgrades (`Unexpected server response: 401`, ...). */
  readonly errors: string[]
  /** Binary messages received, in order. */
  readonly received: Uint8Array[]
}

/** A `WebSocketPolyfill` for y-websocket whose sockets send `headers` and log into `log`. */
export function recordingSocket(log: WireLog, headers: Record<string, string> = {}): typeof WebSocket {
  return class RecordingWebSocket extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers })
      this.on('error', (error) => log.errors.push(error.message))
      this.on('message', (data: Buffer) => log.received.push(new Uint8Array(data)))
    }
  } as typeof WebSocket
}

/** A stock provider on `ws://host:port/yjs/<room>` with `params` in the URL and `headers` on the upgrade. */
export function yClient(
  base: string,
  room: string,
  doc: Y.Doc,
  options: { params?: Record<string, string>; headers?: Record<string, string> } = {},
): { provider: WebsocketProvider; log: WireLog } {
  const log: WireLog = { errors: [], received: [] }
  const provider = new WebsocketProvider(base, room, doc, {
    WebSocketPolyfill: recordingSocket(log, options.headers) as never,
    disableBc: true,
    params: options.params,
    maxBackoffTime: 200,
  })
  return { provider, log }
}

/** Sends a WebSocket upgrade for `path` and resolves with everything the server answered before closing (at most 4 KiB). */
export function rawUpgrade(port: number, path: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    const lines = [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      ...Object.entries(headers).map(([key, value]) => `${key}: ${value}`),
    ]
    socket.on('connect', () => socket.write(`${lines.join('\r\n')}\r\n\r\n`))
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1')
      // An accepted upgrade stays open: stop at the end of its headers.
      if (answer.startsWith('HTTP/1.1 101') && answer.includes('\r\n\r\n')) socket.destroy()
      if (answer.length > 4096) socket.destroy()
    })
    socket.on('close', () => resolve(answer))
    socket.on('error', reject)
  })
}
