/**
 * `node --import tsx bench/peers/w2-child.ts <kind> <hub|client|catchup> <dir> <docs> [port]`:
 * W2's two sides, each in a process of its own. Kinds: `concord` and
 * `automerge-repo` hold small Automerge documents; `concord-yjs` and
 * `y-websocket` the same task as small Yjs documents (a map and a text).
 *
 * - `hub`: builds `docs` small Automerge documents in `<dir>/<kind>-hub` (see
 *   {@link typeInto}), serves them on 127.0.0.1 and prints one JSON line
 *   `{ port }`; for automerge-repo, the documents' URLs go to
 *   `<dir>/urls.json` (a repo client asks for documents by URL). It runs until
 *   killed; on SIGUSR2 it prints `{ hubCpuMs }`, its CPU time since it
 *   started serving.
 * - `client`: an empty agent (`<dir>/<kind>-client`) connects to `port` and
 *   takes every document: Concord syncs the hub's names (one anti-entropy);
 *   automerge-repo finds each URL; a y-websocket client opens one
 *   `WebsocketProvider` per document (its rooms) and keeps each in its own
 *   y-leveldb folder, as an agent that comes back would. Prints `{ ms, cpuMs, docs }`: from the
 *   start of the connection until every document is held, and its CPU time.
 * - `catchup`: the same client folder again, after the hub changed
 *   {@link CHANGED} documents (SIGUSR1 to the hub; it prints `{ changed }`):
 *   until the client holds every change.
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
import { yWebsocketServer } from './y-websocket-server.ts'

const [kind, role, dir, docsText, portText] = process.argv.slice(2)
const docs = Number(docsText)
const name = (i: number) => `task-${String(i).padStart(6, '0')}`

/** A task document as an agent keeps it. */
interface Task {
  title: string
  done: boolean
  notes: string
}

/** The changes every document gets, on either contender: created with a title, then notes typed in 10 changes. */
function typeInto(change: (fn: (doc: Task) => void) => void, i: number): void {
  change((doc) => {
    doc.title = `task ${i}`
    doc.done = false
    doc.notes = ''
  })
  for (let k = 0; k < 10; k++) {
    change((doc) => {
      doc.notes += `step ${k}; `
    })
  }
}

const now = () => Number(process.hrtime.bigint()) / 1e6

/** Documents the hub changes (on SIGUSR1) before the client catches up. */
const CHANGED = 10
const changeOne = (doc: Task) => {
  doc.notes += 'changed while you were away; '
}
/** Whether `doc` holds the change of {@link changeOne}. */
const caughtUp = (doc: Task | undefined) => doc?.notes.includes('changed while you were away') ?? false

/** The same task as a Yjs document: title and done in a map, the notes a text; one transaction per change as {@link typeInto}. */
function typeIntoYjs(doc: Y.Doc, i: number): void {
  doc.transact(() => {
    doc.getMap('task').set('title', `task ${i}`)
    doc.getMap('task').set('done', false)
  })
  const notes = doc.getText('notes')
  for (let k = 0; k < 10; k++) notes.insert(notes.length, `step ${k}; `)
}
const changeOneYjs = (doc: Y.Doc) => doc.getText('notes').insert(doc.getText('notes').length, 'changed while you were away; ')
/** A Yjs document read as the task {@link caughtUp} and the completeness check look at. */
const yjsTask = (doc: Y.Doc): Task => ({
  title: String(doc.getMap('task').get('title')),
  done: Boolean(doc.getMap('task').get('done')),
  notes: doc.getText('notes').toString(),
})

/** Concord's side of either document type: how a name is opened, typed into, changed and read. */
interface ConcordDocs {
  readonly type: 'automerge' | 'yjs'
  build(replica: unknown, i: number): void
  change(replica: unknown): void
  read(replica: unknown): Task
}
const concordAutomerge: ConcordDocs = {
  type: 'automerge',
  build(replica, i) {
    typeInto((fn) => (replica as { change(fn: (doc: Task) => void): boolean }).change(fn), i)
  },
  change: (replica) => (replica as { change(fn: (doc: Task) => void): boolean }).change(changeOne),
  read: (replica) => (replica as { doc: Task }).doc,
}
const concordYjs: ConcordDocs = {
  type: 'yjs',
  build: (replica, i) => typeIntoYjs((replica as { doc: Y.Doc }).doc, i),
  change: (replica) => changeOneYjs((replica as { doc: Y.Doc }).doc),
  read: (replica) => yjsTask((replica as { doc: Y.Doc }).doc),
}

async function concordHub(docsOf: ConcordDocs): Promise<void> {
  const peer = await createPeer({ agentId: 'hub', dir: join(dir, 'concord-hub'), durability: { mode: 'async', rpoMs: 100 } })
  for (let i = 0; i < docs; i++) docsOf.build(await peer.open(name(i), docsOf.type), i)
  await peer.flush()
  const { port } = await peer.listen({ port: 0, host: '127.0.0.1' })
  process.on('SIGUSR1', async () => {
    for (let i = 0; i < CHANGED; i++) docsOf.change(await peer.open(name(i), docsOf.type))
    await peer.flush()
    console.log(JSON.stringify({ changed: CHANGED }))
  })
  console.log(JSON.stringify({ port }))
}

async function concordClient(docsOf: ConcordDocs, port: number, catchup: boolean): Promise<void> {
  const peer = await createPeer({
    agentId: 'client',
    dir: join(dir, 'concord-client'),
    ...(process.env.W2_ASYNC ? { durability: { mode: 'async' as const, rpoMs: 100 } } : {}),
  })
  const start = now()
  const cpu = process.cpuUsage()
  const synced = new Promise<void>((resolve) => peer.once('peer-synced', () => resolve()))
  await peer.connect(`ws://127.0.0.1:${port}/concord`)
  await synced
  const ms = now() - start
  const used = process.cpuUsage(cpu)
  const held = (await peer.names()).length
  const sample = docsOf.read(await peer.open(name(docs - 1), docsOf.type))
  if (!sample.notes.includes('step 9')) throw new Error(`the last document is incomplete: ${JSON.stringify(sample)}`)
  if (catchup) {
    for (let i = 0; i < CHANGED; i++) {
      const doc = docsOf.read(await peer.open(name(i), docsOf.type))
      if (!caughtUp(doc)) throw new Error(`document ${i} missed the hub's change: ${JSON.stringify(doc)}`)
    }
  }
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, docs: held }))
  await peer.close()
}

async function repoHub(): Promise<void> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
  const repo = new Repo({
    storage: new NodeFSStorageAdapter(join(dir, 'automerge-repo-hub')),
    network: [new WebSocketServerAdapter(wss as never)],
    sharePolicy: async () => true,
  })
  const urls: string[] = []
  for (let i = 0; i < docs; i++) {
    const handle = repo.create<Task>()
    typeInto((fn) => handle.change(fn), i)
    urls.push(handle.url)
  }
  await repo.flush()
  await writeFile(join(dir, 'urls.json'), JSON.stringify(urls))
  process.on('SIGUSR1', async () => {
    for (let i = 0; i < CHANGED; i++) (await repo.find<Task>(urls[i] as never)).change(changeOne)
    await repo.flush()
    console.log(JSON.stringify({ changed: CHANGED }))
  })
  console.log(JSON.stringify({ port: (wss.address() as { port: number }).port }))
}

async function repoClient(port: number, catchup: boolean): Promise<void> {
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
  const find = async (url: string): Promise<DocHandle<Task>> => {
    const handle = await repo.find<Task>(url as never, { allowableStates: ['ready', 'unavailable'] })
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
  const handles: DocHandle<Task>[] = await Promise.all(urls.map(find))
  // Back after a disconnection, each document is loaded from storage and synced with the hub: caught up once the changed ones hold the change.
  if (catchup) while (!handles.slice(0, CHANGED).every((handle) => caughtUp(handle.doc()))) await new Promise((resolve) => setTimeout(resolve, 1))
  const ms = now() - start
  const used = process.cpuUsage(cpu)
  const last = handles.at(-1)!.doc()
  if (!last?.notes.includes('step 9')) throw new Error(`the last document is incomplete: ${JSON.stringify(last)}`)
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, docs: handles.length, retries }))
  await repo.flush()
  await repo.shutdown()
  process.exit(0)
}

/**
 * The y-websocket server (bench/peers/y-websocket-server.ts, as W1's hub);
 * its documents are built first, each change stored as its own update (full
 * history, as Concord keeps it).
 */
async function yWebsocketHub(): Promise<void> {
  const { server, ldb, getYDoc } = await yWebsocketServer(join(dir, 'y-websocket-hub'))
  for (let i = 0; i < docs; i++) {
    const doc = new Y.Doc()
    const stored: Promise<unknown>[] = []
    doc.on('update', (update: Uint8Array) => stored.push(ldb.storeUpdate(name(i), update)))
    typeIntoYjs(doc, i)
    await Promise.all(stored)
    doc.destroy()
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  process.on('SIGUSR1', async () => {
    // getYDoc binds the stored state (bindState) before the change: the change is stored as one more update.
    for (let i = 0; i < CHANGED; i++) {
      const doc = getYDoc(name(i))
      await doc.whenInitialized
      changeOneYjs(doc)
    }
    await ldb.getYDoc(name(0))
    console.log(JSON.stringify({ changed: CHANGED }))
  })
  console.log(JSON.stringify({ port: (server.address() as { port: number }).port }))
}

/** A y-websocket agent: one provider per document, each document kept in the agent's y-leveldb folder (loaded first when it comes back). */
async function yWebsocketClient(port: number, catchup: boolean): Promise<void> {
  const { LeveldbPersistence } = await import('y-leveldb')
  const start = now()
  const cpu = process.cpuUsage()
  const ldb = new LeveldbPersistence(join(dir, 'y-websocket-client'))
  const stored: Promise<unknown>[] = []
  const open = async (i: number): Promise<{ doc: Y.Doc; provider: WebsocketProvider }> => {
    const doc = catchup ? await ldb.getYDoc(name(i)) : new Y.Doc()
    doc.on('update', (update: Uint8Array) => stored.push(ldb.storeUpdate(name(i), update)))
    const provider = new WebsocketProvider(`ws://127.0.0.1:${port}`, name(i), doc, { WebSocketPolyfill: WebSocket as never, disableBc: true })
    await new Promise<void>((resolve) => {
      if (provider.synced) resolve()
      else provider.once('sync', () => resolve())
    })
    // The server answers a connection before it loaded the document from y-leveldb (bindState is not awaited):
    // "synced" can come with an empty document, the content following as an update. Held means the whole task.
    const held = () => yjsTask(doc).notes.includes('step 9') && (!catchup || i >= CHANGED || caughtUp(yjsTask(doc)))
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
  const last = yjsTask(opened.at(-1)!.doc)
  if (!last.notes.includes('step 9')) throw new Error(`the last document is incomplete: ${JSON.stringify(last)}`)
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, docs: opened.length }))
  for (const { provider } of opened) provider.destroy()
  await ldb.destroy()
  process.exit(0)
}

const hubs: Record<string, () => Promise<void>> = {
  concord: () => concordHub(concordAutomerge),
  'concord-yjs': () => concordHub(concordYjs),
  'automerge-repo': repoHub,
  'y-websocket': yWebsocketHub,
}
const clients: Record<string, (port: number, catchup: boolean) => Promise<void>> = {
  concord: (port, catchup) => concordClient(concordAutomerge, port, catchup),
  'concord-yjs': (port, catchup) => concordClient(concordYjs, port, catchup),
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
