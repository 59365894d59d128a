/**
 * Entry of a contender process (forked by bench/peers/child.ts with its role
 * as argv[2]): a hub (Concord peer, or the y-websocket server with y-leveldb)
 * or a client (Concord peer, or a stock y-websocket `WebsocketProvider`).
 *
 * Hub requests: `{ start }` -> `{ concordUrl?, yjsUrl }`; `{ observe: room }`
 * (record when each client's clocks reach the hub's document) and
 * `{ arrivals }`; `{ usage }`; `{ close }`. Client requests: `{ start }` -> `{ clientId }` once connected
 * (and, for y-websocket, synced); `{ type: { count, intervalMs, at } }` types
 * `count` characters, one transaction each, at `at + k * intervalMs`
 * (monotonic ms) and answers with each edit's clock and time; `{ await:
 * { expect } }` answers, once the document holds every clock in `expect`
 * (client id -> next clock), with the time each remote clock arrived, the
 * text's length and digest, and the CPU the process used since typing began.
 */
import { createHash } from 'node:crypto'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { WebSocket } from 'ws'
import * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'
import { createPeer, type Peer } from '../../peer/index.ts'
import { monotonicMs, processUsage, serveRequests, threadCpuMs } from './child.ts'
import { yWebsocketServer } from './y-websocket-server.ts'

/** A hub role. */
export type HubRole = { kind: 'concord-hub'; dir: string; durability: 'sync' | 'async' } | { kind: 'yws-hub'; dir: string }

/** A client role: `url` is the Concord URL or the y-websocket base URL (the room is appended). */
export type ClientRole = { kind: 'concord-client' | 'yws-client'; url: string; room: string; seed: number; mergeLocal?: 'async' | 'all' }

export type Role = HubRole | ClientRole

/** A small deterministic PRNG (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Records, for every remote client id, when each of its clocks was integrated into `doc` (afterState against beforeState). */
function arrivalRecorder(doc: Y.Doc, onProgress: () => void = () => undefined): Map<number, number[]> {
  const arrivals = new Map<number, number[]>()
  doc.on('afterTransaction', (transaction: Y.Transaction) => {
    const at = monotonicMs()
    for (const [clientId, after] of transaction.afterState) {
      if (clientId === doc.clientID) continue
      const before = transaction.beforeState.get(clientId) ?? 0
      if (after <= before) continue
      let times = arrivals.get(clientId)
      if (!times) arrivals.set(clientId, (times = []))
      for (let clock = before; clock < after; clock++) times[clock] = at
    }
    onProgress()
  })
  return arrivals
}

async function concordHub(role: Extract<HubRole, { kind: 'concord-hub' }>): Promise<void> {
  let peer: Peer | undefined
  let arrivals: Map<number, number[]> | undefined
  serveRequests(async (message) => {
    if (message.observe) arrivals = arrivalRecorder((await peer!.yjs(String(message.observe))).doc)
    if (message.arrivals) return { arrivals: Object.fromEntries(arrivals ?? []) }
    if (message.start) {
      peer = await createPeer({
        agentId: 'hub',
        dir: role.dir,
        durability: role.durability === 'sync' ? { mode: 'sync' } : { mode: 'async', rpoMs: 100 },
      })
      const { url, port } = await peer.listen()
      return { concordUrl: url, yjsUrl: `ws://127.0.0.1:${port}/yjs` }
    }
    if (message.usage) return { ...processUsage(), durability: peer?.store.durability(), sessions: peer?.stats().totals }
    if (message.close) await peer?.close()
    return undefined
  })
}

/** The y-websocket hub (bench/peers/y-websocket-server.ts) serving the run's requests. */
async function yWebsocketHub(role: Extract<HubRole, { kind: 'yws-hub' }>): Promise<void> {
  const { server, wss, ldb, getYDoc } = await yWebsocketServer(role.dir)
  let arrivals: Map<number, number[]> | undefined
  serveRequests(async (message) => {
    if (message.observe) arrivals = arrivalRecorder(getYDoc(String(message.observe)))
    if (message.arrivals) return { arrivals: Object.fromEntries(arrivals ?? []) }
    if (message.start) {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      return { yjsUrl: `ws://127.0.0.1:${port}` }
    }
    if (message.usage) return processUsage()
    if (message.close) {
      for (const socket of wss.clients) socket.terminate()
      await new Promise((resolve) => server.close(resolve))
      await ldb.destroy()
    }
    return undefined
  })
}

async function client(role: ClientRole): Promise<void> {
  let doc: Y.Doc | undefined
  let peer: Peer | undefined
  let provider: WebsocketProvider | undefined
  /** Remote client id -> arrival time of each clock. */
  let arrivals = new Map<number, number[]>()
  let onProgress: (() => void) | undefined
  /** CPU used when typing began (the run's CPU leaves out start-up). */
  let cpuAtStart = 0
  let threadsAtStart = threadCpuMs()
  /** How late the event loop ran its timers while typing and receiving. */
  const loopDelay = monitorEventLoopDelay({ resolution: 5 })
  const watch = (target: Y.Doc) => {
    arrivals = arrivalRecorder(target, () => onProgress?.())
  }
  serveRequests(async (message) => {
    if (message.start) {
      if (role.kind === 'concord-client') {
        peer = await createPeer({ agentId: `client-${role.seed}`, ...(role.mergeLocal ? { mergeLocal: role.mergeLocal } : {}) })
        await peer.connect(role.url)
        doc = (await peer.yjs(role.room)).doc
        watch(doc)
      } else {
        doc = new Y.Doc()
        watch(doc)
        provider = new WebsocketProvider(role.url, role.room, doc, { WebSocketPolyfill: WebSocket as never, disableBc: true })
        const synced = provider
        await new Promise<void>((resolve) => {
          if (synced.synced) resolve()
          else synced.once('sync', () => resolve())
        })
      }
      return { clientId: doc.clientID }
    }
    if (message.type) {
      const { count, intervalMs, at } = message.type as { count: number; intervalMs: number; at: number }
      cpuAtStart = processUsage().cpuMs
      threadsAtStart = threadCpuMs()
      loopDelay.enable()
      const text = doc!.getText('t')
      const next = random(role.seed)
      const clocks: number[] = []
      const times: number[] = []
      const letters = 'abcdefghijklmnopqrstuvwxyz'
      for (let k = 0; k < count; k++) {
        const wait = at + k * intervalMs - monotonicMs()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        clocks.push(Y.getState(doc!.store, doc!.clientID))
        times.push(monotonicMs())
        text.insert(Math.floor(next() * (text.length + 1)), letters[k % letters.length])
      }
      return { clocks, times, nextClock: Y.getState(doc!.store, doc!.clientID) }
    }
    if (message.await) {
      const { expect } = message.await as { expect: Record<string, number> }
      const ready = () =>
        Object.entries(expect).every(([clientId, clock]) => Number(clientId) === doc!.clientID || Y.getState(doc!.store, Number(clientId)) >= clock)
      if (!ready()) {
        await new Promise<void>((resolve) => {
          onProgress = () => {
            if (ready()) {
              onProgress = undefined
              resolve()
            }
          }
        })
      }
      const content = doc!.getText('t').toString()
      return {
        arrivals: Object.fromEntries(arrivals),
        length: content.length,
        digest: createHash('sha256').update(content).digest('hex').slice(0, 16),
        cpuMs: processUsage().cpuMs - cpuAtStart,
        threadsMs: Object.fromEntries(Object.entries(threadCpuMs()).map(([kind, ms]) => [kind, ms - threadsAtStart[kind as keyof typeof threadsAtStart]])),
        loopDelayP50Ms: loopDelay.percentile(50) / 1e6,
        loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
      }
    }
    if (message.close) {
      provider?.destroy()
      await peer?.close()
    }
    return undefined
  })
}

const role = JSON.parse(process.argv[2]) as Role
if (role.kind === 'concord-hub') await concordHub(role)
else if (role.kind === 'yws-hub') await yWebsocketHub(role)
else await client(role)
