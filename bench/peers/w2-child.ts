/**
 * `node --import tsx bench/peers/w2-child.ts <kind> <workload> <hub|client|catchup> <dir> <docs> [port]`:
 * the two sides of a first sync of many small documents (W2, and the peer
 * columns of bench/many-names.bench.ts), each in a process of its own.
 * Kinds: `concord`, `concord-yjs`, `automerge-repo`, `y-websocket`.
 * Workloads (bench/peers/w2-workloads.ts say what each document holds):
 * `tasks` (W2: `concord` and `automerge-repo` hold Automerge task
 * documents, `concord-yjs` and `y-websocket` the same task as Yjs documents),
 * `counter` and `text` (many-names: a counter incremented once, or one short
 * text; Concord holds a PN-counter or a Yjs document).
 *
 * - `hub`: builds `docs` documents in `<dir>/<kind>-hub`, serves them on
 *   127.0.0.1 and prints one JSON line `{ port, buildMs }` (the time it took
 *   to create and store them); for automerge-repo, the documents' URLs go to
 *   `<dir>/urls.json` (a repo client asks for documents by URL). It runs until
 *   killed; on SIGUSR2 it prints `{ hubCpuMs }`, its CPU time since it
 *   started serving; on SIGUSR1 it changes the workload's changed documents
 *   and prints `{ changed }`.
 * - `client`: an empty agent (`<dir>/<kind>-client`) connects to `port` and
 *   takes every document: Concord syncs the hub's names (one anti-entropy);
 *   automerge-repo finds each URL; a y-websocket client opens one
 *   `WebsocketProvider` per document (its rooms) and keeps each in its own
 *   y-leveldb folder, as an agent that comes back would. Prints `{ ms, cpuMs, peakRssMiB, docs }`: from the
 *   start of the connection until every document is held, and its CPU time.
 * - `catchup`: the same client folder again, after the hub changed its
 *   documents: until the client holds every change.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Repo, type DocHandle } from '@automerge/automerge-repo'
import { WebSocketClientAdapter, WebSocketServerAdapter } from '@automerge/automerge-repo-network-websocket'
import { NodeFSStorageAdapter } from '@automerge/automerge-repo-storage-nodefs'
import { WebSocket, WebSocketServer } from 'ws'
import { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'
import { createPeer } from '../../peer/index.ts'
import { type AutomergeDoc, type ConcordDocs, workloadOf } from './w2-workloads.ts'
import { yWebsocketServer } from './y-websocket-server.ts'

const [kind, workloadName, role, dir, docsText, portText] = process.argv.slice(2)
const docs = Number(docsText)
const workload = workloadOf(workloadName)
const name = (i: number) => `task-${String(i).padStart(6, '0')}`
const changed = workload.changed(docs)

const now = () => Number(process.hrtime.bigint()) / 1e6
/**
 * How long an automerge-repo client waits for the changed documents when it
 * comes back. Under load its hub was seen to drop the client's WebSocket (the
 * client then logs "Websocket not ready" and reconnects) and a changed
 * document or two never to arrive (2,000 documents, automerge-repo 2.5.6).
 */
const CATCHUP_LIMIT_MS = 120_000

/** Batches of `size` indices below `docs`. */
function* batches(size: number): Generator<number[]> {
  for (let start = 0; start < docs; start += size) yield Array.from({ length: Math.min(size, docs - start) }, (_, k) => start + k)
}

async function concordHub(docsOf: ConcordDocs): Promise<void> {
  const peer = await createPeer({ agentId: 'hub', dir: join(dir, 'concord-hub'), durability: { mode: 'async', rpoMs: 100 }, ...workload.concordOptions })
  const start = now()
  if (workload.createBatch === 1) {
    for (let i = 0; i < docs; i++) docsOf.build(await peer.open(name(i), docsOf.type), i)
  } else {
    for (const batch of batches(workload.createBatch)) {
      const replicas = await peer.openMany(batch.map((i) => ({ name: name(i), type: docsOf.type })))
      replicas.forEach((replica, k) => docsOf.build(replica, batch[k]))
    }
  }
  await peer.flush()
  const buildMs = now() - start
  const { port } = await peer.listen({ port: 0, host: '127.0.0.1' })
  process.on('SIGUSR1', async () => {
    for (const i of changed) docsOf.change(await peer.open(name(i), docsOf.type))
    await peer.flush()
    console.log(JSON.stringify({ changed: changed.length }))
  })
  console.log(JSON.stringify({ port, buildMs }))
}

async function concordClient(docsOf: ConcordDocs, port: number, catchup: boolean): Promise<void> {
  const peer = await createPeer({
    agentId: 'client',
    dir: join(dir, 'concord-client'),
    ...(process.env.W2_ASYNC || workload.concordClientAsync ? { durability: { mode: 'async' as const, rpoMs: 100 } } : {}),
    ...workload.concordOptions,
  })
  const start = now()
  const cpu = process.cpuUsage()
  const synced = new Promise<void>((resolve) => peer.once('peer-synced', () => resolve()))
  await peer.connect(`ws://127.0.0.1:${port}/concord`)
  await synced
  const ms = now() - start
  const used = process.cpuUsage(cpu)
  // The peak until synced (listing every name below allocates per name).
  const peakRssMiB = process.resourceUsage().maxRSS / 1024
  const held = (await peer.names()).length
  const last = await peer.open(name(docs - 1), docsOf.type)
  if (!docsOf.complete(last)) throw new Error(`the last document is incomplete: ${docsOf.show(last)}`)
  if (catchup) {
    for (const i of changed) {
      const replica = await peer.open(name(i), docsOf.type)
      if (!docsOf.caughtUp(replica)) throw new Error(`document ${i} missed the hub's change: ${docsOf.show(replica)}`)
    }
  }
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, peakRssMiB, docs: held }))
  await peer.close()
}

async function repoHub(): Promise<void> {
  const model = workload.automerge
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
  const repo = new Repo({
    storage: new NodeFSStorageAdapter(join(dir, 'automerge-repo-hub')),
    network: [new WebSocketServerAdapter(wss as never)],
    sharePolicy: async () => true,
  })
  const start = now()
  const urls: string[] = []
  for (let i = 0; i < docs; i++) {
    const handle = model.initial ? repo.create<AutomergeDoc>(model.initial(i)) : repo.create<AutomergeDoc>()
    model.build((fn) => handle.change(fn), i)
    urls.push(handle.url)
  }
  await repo.flush()
  const buildMs = now() - start
  await writeFile(join(dir, 'urls.json'), JSON.stringify(urls))
  process.on('SIGUSR1', async () => {
    for (const i of changed) (await repo.find<AutomergeDoc>(urls[i] as never)).change(model.change)
    await repo.flush()
    console.log(JSON.stringify({ changed: changed.length }))
  })
  console.log(JSON.stringify({ port: (wss.address() as { port: number }).port, buildMs }))
}

async function repoClient(port: number, catchup: boolean): Promise<void> {
  const model = workload.automerge
  const urls = JSON.parse(await readFile(join(dir, 'urls.json'), 'utf8')) as string[]
  const start = now()
  const cpu = process.cpuUsage()
  const repo = new Repo({
    storage: new NodeFSStorageAdapter(join(dir, 'automerge-repo-client')),
    network: [new WebSocketClientAdapter(`ws://127.0.0.1:${port}`)],
  })
  // A find with no peer yet answers "unavailable" at once: wait for the hub first, as an application would.
  while (repo.peers.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
  // Under load a find was seen to end "unavailable" now and then although the hub holds every document
  // (automerge-repo 2.5.6): such a handle is asked for again, as an application would, until it is ready.
  let retries = 0
  const find = async (url: string): Promise<DocHandle<AutomergeDoc>> => {
    const handle = await repo.find<AutomergeDoc>(url as never, { allowableStates: ['ready', 'unavailable'] })
    for (let attempt = 1; !handle.isReady(); attempt++) {
      if (attempt > 600) throw new Error(`${url} stayed unavailable`)
      if (attempt % 50 === 1) {
        retries++
        handle.request()
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return handle
  }
  const handles: DocHandle<AutomergeDoc>[] = await Promise.all(urls.map(find))
  // Back after a disconnection, each document is loaded from storage and synced with the hub: caught up once the changed ones hold the change.
  // Not for ever: past CATCHUP_LIMIT_MS the client stops waiting and reports how many changes had not arrived.
  const deadline = Date.now() + CATCHUP_LIMIT_MS
  const missing = () => (catchup ? changed.filter((i) => !model.caughtUp(handles[i].doc())) : [])
  while (missing().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1))
  const missed = new Set(missing()).size
  const ms = now() - start
  const used = process.cpuUsage(cpu)
  const last = handles.at(-1)!.doc()
  if (!model.complete(last)) throw new Error(`the last document is incomplete: ${JSON.stringify(last)}`)
  console.log(
    JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, peakRssMiB: process.resourceUsage().maxRSS / 1024, docs: handles.length, retries, missed }),
  )
  await repo.flush()
  await repo.shutdown()
  process.exit(0)
}

/**
 * The y-websocket server (bench/peers/y-websocket-server.ts, as W1's hub);
 * its documents are built first, each change stored as its own update (full
 * history, as Concord keeps it), the workload's `createBatch` documents at a time.
 */
async function yWebsocketHub(): Promise<void> {
  const model = workload.yjs
  const { server, ldb, getYDoc } = await yWebsocketServer(join(dir, 'y-websocket-hub'))
  const start = now()
  for (const batch of batches(workload.createBatch)) {
    const stored: Promise<unknown>[] = []
    for (const i of batch) {
      const doc = new Y.Doc()
      doc.on('update', (update: Uint8Array) => stored.push(ldb.storeUpdate(name(i), update)))
      model.build(doc, i)
      doc.destroy()
    }
    await Promise.all(stored)
  }
  const buildMs = now() - start
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  process.on('SIGUSR1', async () => {
    // getYDoc binds the stored state (bindState, not awaited: whenInitialized does not wait for it), so the stored
    // state is applied here first, and the change follows what the document holds; it is stored as one more update.
    for (const i of changed) {
      const doc = getYDoc(name(i))
      await doc.whenInitialized
      Y.applyUpdate(doc, Y.encodeStateAsUpdate(await ldb.getYDoc(name(i))))
      model.change(doc)
    }
    await ldb.getYDoc(name(0))
    console.log(JSON.stringify({ changed: changed.length }))
  })
  console.log(JSON.stringify({ port: (server.address() as { port: number }).port, buildMs }))
}

/** A y-websocket agent: one provider per document, each document kept in the agent's y-leveldb folder (loaded first when it comes back). */
async function yWebsocketClient(port: number, catchup: boolean): Promise<void> {
  const model = workload.yjs
  const { LeveldbPersistence } = await import('y-leveldb')
  const start = now()
  const cpu = process.cpuUsage()
  const ldb = new LeveldbPersistence(join(dir, 'y-websocket-client'))
  const stored: Promise<unknown>[] = []
  const mustCatchUp = new Set(catchup ? changed : [])
  const open = async (i: number): Promise<{ doc: Y.Doc; provider: WebsocketProvider }> => {
    const doc = catchup ? await ldb.getYDoc(name(i)) : new Y.Doc()
    doc.on('update', (update: Uint8Array) => stored.push(ldb.storeUpdate(name(i), update)))
    const provider = new WebsocketProvider(`ws://127.0.0.1:${port}`, name(i), doc, { WebSocketPolyfill: WebSocket as never, disableBc: true })
    await new Promise<void>((resolve) => {
      if (provider.synced) resolve()
      else provider.once('sync', () => resolve())
    })
    // The server answers a connection before it loaded the document from y-leveldb (bindState is not awaited):
    // "synced" can come with an empty document, the content following as an update. Held means the whole document.
    const held = () => model.complete(doc) && (!mustCatchUp.has(i) || model.caughtUp(doc))
    if (!held()) {
      await new Promise<void>((resolve) => {
        const check = () => {
          if (!held()) return
          doc.off('update', check)
          resolve()
        }
        doc.on('update', check)
      })
    }
    return { doc, provider }
  }
  const opened = await Promise.all(Array.from({ length: docs }, (_, i) => open(i)))
  await Promise.all(stored)
  const ms = now() - start
  const used = process.cpuUsage(cpu)
  const last = opened.at(-1)!.doc
  if (!model.complete(last)) throw new Error(`the last document is incomplete: ${JSON.stringify(last.toJSON())}`)
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, peakRssMiB: process.resourceUsage().maxRSS / 1024, docs: opened.length }))
  for (const { provider } of opened) provider.destroy()
  await ldb.destroy()
  process.exit(0)
}

const concordDocs = (): ConcordDocs => {
  const docsOf = workload.concord[kind as 'concord' | 'concord-yjs']
  if (!docsOf) throw new Error(`w2-child: workload ${workloadName} has no ${kind}`)
  return docsOf
}
const hubs: Record<string, () => Promise<void>> = {
  concord: () => concordHub(concordDocs()),
  'concord-yjs': () => concordHub(concordDocs()),
  'automerge-repo': repoHub,
  'y-websocket': yWebsocketHub,
}
const clients: Record<string, (port: number, catchup: boolean) => Promise<void>> = {
  concord: (port, catchup) => concordClient(concordDocs(), port, catchup),
  'concord-yjs': (port, catchup) => concordClient(concordDocs(), port, catchup),
  'automerge-repo': repoClient,
  'y-websocket': yWebsocketClient,
}
if (!hubs[kind]) throw new Error(`w2-child: unknown kind ${kind}`)
if (role === 'hub') {
  await hubs[kind]()
  // Asked for once the client is done: the hub's CPU time since it started serving.
  const serving = process.cpuUsage()
  process.on('SIGUSR2', () => {
    const used = process.cpuUsage(serving)
    console.log(JSON.stringify({ hubCpuMs: (used.user + used.system) / 1000 }))
  })
} else await clients[kind](Number(portText), role === 'catchup')
