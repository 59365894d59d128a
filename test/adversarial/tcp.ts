/**
 * Raw TCP for the slowloris attacks: an HTTP upgrade request or a WebSocket
 * frame written one byte at a time, watching when the server hangs up.
 */
import { connect, type Socket } from 'node:net'
import { randomBytes } from 'node:crypto'

/** The HTTP/1.1 WebSocket upgrade request a browser would send for `path`. */
export function upgradeRequest(host: string, port: number, path: string): Uint8Array {
  return new TextEncoder().encode(
    [
      `GET ${path} HTTP/1.1`,
      `Host: ${host}:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
      '',
      '',
    ].join('\r\n'),
  )
}

/** One binary WebSocket frame as a client sends it (FIN, opcode 2, masked). */
export function clientFrame(payload: Uint8Array): Uint8Array {
  const mask = randomBytes(4)
  const length = payload.length
  const header = length < 126 ? [0x82, 0x80 | length] : length < 65536 ? [0x82, 0x80 | 126, length >> 8, length & 0xff] : undefined
  if (!header) throw new RangeError('clientFrame: payload too large for this helper')
  const frame = new Uint8Array(header.length + 4 + length)
  frame.set(header, 0)
  frame.set(mask, header.length)
  for (let i = 0; i < length; i++) frame[header.length + 4 + i] = payload[i] ^ mask[i % 4]
  return frame
}

/** A connection writing its bytes slowly. */
export interface Trickle {
  /** ms from the first byte until the server closed the connection, or undefined while it holds it. */
  readonly heldMs: number | undefined
  /** Bytes written so far. */
  readonly written: number
  /** True once every byte was written (the server waited for all of it). */
  readonly finished: boolean
  /** Closes it from our side (if the server has not). */
  stop(): void
}

/**
 * Opens a TCP connection to `host:port` from `localAddress`, writes
 * `prefix` at once (for example a complete upgrade request, waiting for the
 * server's 101 first), then `bytes` one byte every `everyMs`.
 */
export function trickle(
  host: string,
  port: number,
  bytes: Uint8Array,
  options: { everyMs: number; localAddress?: string; prefix?: Uint8Array },
): Promise<Trickle> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host, port, localAddress: options.localAddress })
    let written = 0
    let started = 0
    let heldMs: number | undefined
    let timer: ReturnType<typeof setInterval> | undefined
    const handle: Trickle = {
      get heldMs() {
        return heldMs
      },
      get written() {
        return written
      },
      get finished() {
        return written === bytes.length
      },
      stop() {
        if (timer) clearInterval(timer)
        socket.destroy()
      },
    }
    const begin = () => {
      started = performance.now()
      timer = setInterval(() => {
        if (written >= bytes.length) {
          clearInterval(timer)
          return
        }
        socket.write(bytes.subarray(written, written + 1))
        written++
      }, options.everyMs)
      resolve(handle)
    }
    socket.on('error', () => {})
    socket.on('close', () => {
      if (timer) clearInterval(timer)
      if (started > 0 && heldMs === undefined) heldMs = performance.now() - started
      if (started === 0) reject(new Error('closed before the trickle began'))
    })
    socket.once('connect', () => {
      if (!options.prefix) return begin()
      socket.write(options.prefix)
      let answer = ''
      const onData = (chunk: Buffer) => {
        answer += chunk.toString('latin1')
        if (!answer.includes('\r\n\r\n')) return
        socket.off('data', onData)
        if (!answer.startsWith('HTTP/1.1 101')) {
          socket.destroy()
          reject(new Error(`upgrade refused: ${answer.split('\r\n')[0]}`))
          return
        }
        begin()
      }
      socket.on('data', onData)
    })
  })
}
