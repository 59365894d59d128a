/**
 * `node --import tsx bench/peers/w2-child.ts <concord|automerge-repo> <hub|client> <dir> <docs> [port]`:
 * W2's two sides, each in a process of its own.
 *
 * - `hub`: builds `docs` small Automerge documents in `<dir>/<kind>-hub` (see
 *   {@link typeInto}), serves them on 127.0.0.1 and prints one JSON line
 *   `{ port }`; for automerge-repo, the documents' URLs go to
 *   `<dir>/urls.json` (a repo client asks for documents by URL). It runs until
 *   killed; on SIGUSR2 it prints `{ hubCpuMs }`, its CPU time since it
 *   started serving.
 * - `client`: an empty agent (`<dir>/<kind>-client`) connects to `port` and
 *   takes every document: Concord syncs the hub's names (one anti-entropy);
 *   automerge-repo finds each URL. Prints `{ ms, cpuMs, docs }`: from the
 *   start of the connection until every document is held, and its CPU time.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Repo, type DocHandle } from '@automerge/automerge-repo'
import { WebSocketClientAdapter, WebSocketServerAdapter } from '@automerge/automerge-repo-network-websocket'
import { NodeFSStorageAdapter } from '@automerge/automerge-repo-storage-nodefs'
import { WebSocketServer } from 'ws'
import { createPeer } from '../../peer/index.ts'

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

async function concordHub(): Promise<void> {
  const peer = await createPeer({ agentId: 'hub', dir: join(dir, 'concord-hub'), durability: { mode: 'async', rpoMs: 100 } })
  for (let i = 0; i < docs; i++) {
    const replica = (await peer.open(name(i), 'automerge')) as unknown as { change(fn: (doc: Task) => void): boolean }
    typeInto((fn) => replica.change(fn), i)
  }
  await peer.flush()
  const { port } = await peer.listen({ port: 0, host: '127.0.0.1' })
  console.log(JSON.stringify({ port }))
}

async function concordClient(port: number): Promise<void> {
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
  const sample = (await peer.open(name(docs - 1), 'automerge')) as unknown as { doc: Task }
  if (!sample.doc.notes.includes('step 9')) throw new Error(`the last document is incomplete: ${JSON.stringify(sample.doc)}`)
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
  console.log(JSON.stringify({ port: (wss.address() as { port: number }).port }))
}

async function repoClient(port: number): Promise<void> {
  const urls = JSON.parse(await readFile(join(dir, 'urls.json'), 'utf8')) as string[]
  const start = now()
  const cpu = process.cpuUsage()
  const repo = new Repo({
    storage: new NodeFSStorageAdapter(join(dir, 'automerge-repo-client')),
    network: [new WebSocketClientAdapter(`ws://127.0.0.1:${port}`)],
  })
  // A find with no peer yet answers "unavailable" at once: wait for the hub first, as an application would.
  while (repo.peers.length === 0) await new Promise((resolve) => setTimeout(resolve, 1))
  const handles: DocHandle<Task>[] = await Promise.all(urls.map((url) => repo.find<Task>(url as never)))
  const ms = now() - start
  const used = process.cpuUsage(cpu)
  const last = handles.at(-1)!.doc()
  if (!last?.notes.includes('step 9')) throw new Error(`the last document is incomplete: ${JSON.stringify(last)}`)
  console.log(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, docs: handles.length }))
  await repo.flush()
  await repo.shutdown()
  process.exit(0)
}

if (role === 'hub') {
  await (kind === 'concord' ? concordHub() : repoHub())
  // Asked for once the client is done: the hub's CPU time since it started serving.
  const serving = process.cpuUsage()
  process.on('SIGUSR2', () => {
    const used = process.cpuUsage(serving)
    console.log(JSON.stringify({ hubCpuMs: (used.user + used.system) / 1000 }))
  })
} else await (kind === 'concord' ? concordClient(Number(portText)) : repoClient(Number(portText)))
