/**
 * An agent process of the demos: one Concord peer on its own LevelDB folder,
 * listening on WebSocket, driven by its orchestrator over Node IPC (see
 * protocol.ts). It exits when the orchestrator goes away.
 *
 * Every write it acknowledges was made durable first: `write` answers after
 * `peer.transact()` resolved, which in the default `sync` durability mode
 * means the log record is fsynced.
 */
import { createHash } from 'node:crypto'
import { createPeer, type Peer } from '../../peer/index.ts'
import type { AgentConfig, Command, Digest, RequestMessage, Requests, ResponseMessage } from './protocol.ts'
import { contextState, publishPlan, research, summarize } from './research.ts'

const started = Date.now()
const config = JSON.parse(process.argv[2] ?? '{}') as AgentConfig
if (typeof process.send !== 'function') {
  console.error('demos/lib/agent.ts runs as a child process of a demo (it needs an IPC channel)')
  process.exit(2)
}
// The orchestrator died or let go: never linger.
process.on('disconnect', () => process.exit(1))

/** The names the partition and offline demos write. */
export const NAMES = { facts: 'facts', writes: 'writes', log: 'log', last: 'last' } as const

const peer: Peer = await createPeer({ agentId: config.id, dir: config.dir })
/** The links this agent keeps, each with the number of the dial loop that owns it. */
const dialed = new Map<string, number>()
let dialLoops = 0

/**
 * Keeps dialing `url` until a first handshake succeeds (connect rejects when
 * its first attempt fails, e.g. the other agent is restarting); from then on
 * the peer reconnects by itself. Ends when the link is no longer wanted.
 */
function keepDialing(url: string, loop: number): void {
  peer.connect(url).catch(() => {
    if (dialed.get(url) !== loop) return // cut meanwhile (disconnect rejects the pending connect)
    setTimeout(() => {
      if (dialed.get(url) === loop) keepDialing(url, loop)
    }, 200).unref()
  })
}

async function handles() {
  return {
    facts: await peer.set<string>(NAMES.facts),
    writes: await peer.counter(NAMES.writes),
    log: (await peer.yjs(NAMES.log)).doc.getArray<string>('entries'),
    last: await peer.register(NAMES.last),
  }
}

async function digest(): Promise<Digest> {
  const { facts, writes, log, last } = await handles()
  const sorted = [...facts.values()].sort()
  const hash = createHash('sha256')
    .update(JSON.stringify({ facts: sorted, writes: writes.value(), log: log.toArray(), last: last.value() }))
    .digest('hex')
  return { digest: hash.slice(0, 16), facts: sorted.length, writes: writes.value() }
}

type Handler<C extends Command> = (args: Requests[C]['args']) => Promise<Requests[C]['result']>
const handlers: { [C in Command]: Handler<C> } = {
  async links({ urls, refresh = [] }) {
    const wanted = new Set(urls)
    for (const url of [...dialed.keys()]) {
      if (!wanted.has(url) || refresh.includes(url)) {
        peer.disconnect(url)
        dialed.delete(url)
      }
    }
    for (const url of wanted) {
      if (dialed.has(url)) continue
      const loop = ++dialLoops
      dialed.set(url, loop)
      keepDialing(url, loop)
    }
    return { connected: peer.connectedPeers }
  },
  async write({ ids }) {
    const { facts, writes, log, last } = await handles()
    for (const id of ids) {
      await peer.transact(() => {
        facts.add(id)
        writes.increment()
        log.push([`${id} by ${peer.agentId}`])
        last.set({ id, by: peer.agentId })
      })
    }
    return { acked: ids }
  },
  async seed({ prefix, count, textBytes }) {
    const { facts, writes, log } = await handles()
    const filler = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(textBytes / 27)).slice(0, textBytes)
    await peer.transact(() => {
      for (let i = 0; i < count; i++) {
        facts.add(`${prefix}-${i}`)
        log.push([`${prefix}-${i}: ${filler}`])
      }
      writes.increment(count)
    })
    return { facts: facts.size }
  },
  digest: () => digest(),
  async state() {
    const { facts, writes, log, last } = await handles()
    return { facts: [...facts.values()].sort(), writes: writes.value(), log: log.length, last: last.value() }
  },
  async stats() {
    const { totals } = peer.stats()
    const diskBytes = (await peer.names()).reduce((sum, info) => sum + info.size, 0)
    return { bytesIn: totals.bytesIn, bytesOut: totals.bytesOut, peers: peer.connectedPeers, diskBytes }
  },
  async flush({ acks, timeoutMs }) {
    await peer.flush({ acks, timeoutMs })
    return { ok: true }
  },
  research: (args) => research(peer, args),
  async plan({ topic, tasks, peers }) {
    await publishPlan(peer, topic, tasks, peers)
    return { ok: true }
  },
  async summarize({ timeoutMs }) {
    return { summary: await summarize(peer, timeoutMs) }
  },
  context: () => contextState(peer),
  async close() {
    await peer.close()
    setImmediate(() => process.exit(0))
    return { ok: true }
  },
}

process.on('message', (message: RequestMessage) => {
  const handler = handlers[message.cmd] as Handler<Command> | undefined
  const reply = (response: ResponseMessage) => {
    if (process.connected) process.send!(response)
  }
  if (!handler) return reply({ rid: message.rid, ok: false, error: `unknown command ${String(message.cmd)}` })
  handler(message.args as never).then(
    (result) => reply({ rid: message.rid, ok: true, result }),
    (error) => reply({ rid: message.rid, ok: false, error: (error as Error)?.message ?? String(error) }),
  )
})

const { url, port } = await peer.listen({ port: config.port, host: '127.0.0.1', yWebsocket: false })
process.send({ event: 'ready', url, port, startupMs: Date.now() - started })
