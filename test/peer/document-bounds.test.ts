/**
 * Document work is bounded and isolated, against a server in its own
 * process (test/peer/fixtures/document-server.ts) over real sockets:
 * - a delta that makes Automerge's wasm trap (here: the server's wasm
 *   memory capped, so that a 300,000-character insert exhausts it, as a
 *   10-million-character one does at 4 GB) is refused, Automerge is reloaded
 *   and every other Automerge name keeps working: a writer's flush is
 *   acknowledged, a new peer syncs the documents, errors carry codes;
 * - a delta over `maxOperations` is refused with CONCORD_LIMIT_EXCEEDED
 *   before Automerge runs (the same capped server never traps);
 * - a flood of Yjs updates whose dependency is missing is held within the
 *   per-name budget, the rest dropped and counted; when the writer comes, a
 *   later anti-entropy round converges.
 * Each time, the reopened store holds nothing the attacker sent.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import { Emitter } from '../../crdt/emitter.ts'
import { ErrorCodes } from '../../crdt/errors.ts'
import type { YjsReplica } from '../../crdt/documents/index.ts'
import { createPeer, type Peer } from '../../peer/index.ts'
import { openStore } from '../../persistence/index.ts'
import { attachSession, agentId as toPeerId } from '../../sync/index.ts'
import type { LocalCommit, SyncHost } from '../../sync/host.ts'
import { WebSocketTransport } from '../../transports/websocket/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

type Line = Record<string, any>

/** The server child process and the JSON lines it printed. */
class ServerProcess {
  readonly lines: Line[] = []
  private readonly child: ChildProcessWithoutNullStreams
  private stderr = ''
  private exitCode: number | null | undefined

  constructor(options: { dir: string; documentLimits?: Record<string, number> }, nodeFlags: string[] = []) {
    this.child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', 'test/peer/fixtures/document-server.ts', JSON.stringify(options)])
    let buffer = ''
    this.child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      const parts = buffer.split('\n')
      buffer = parts.pop()!
      for (const part of parts) if (part.trim() !== '') this.lines.push(JSON.parse(part) as Line)
    })
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString('utf8')
    })
    this.child.on('exit', (code) => {
      this.exitCode = code
    })
  }

  get alive(): boolean {
    return this.exitCode === undefined
  }

  async url(): Promise<string> {
    await until(() => this.lines.some((line) => line.type === 'listening') || !this.alive, 'the server listens', 30_000)
    assert.ok(this.alive, `the server exited: ${this.stderr}`)
    return this.lines.find((line) => line.type === 'listening')!.url as string
  }

  async stats(): Promise<Line> {
    const before = this.lines.filter((line) => line.type === 'stats').length
    this.child.stdin.write('stats\n')
    await until(() => this.lines.filter((line) => line.type === 'stats').length > before || !this.alive, 'server stats')
    assert.ok(this.alive, `the server died: ${this.stderr}`)
    return this.lines.filter((line) => line.type === 'stats').at(-1)!
  }

  /** Stops the server cleanly; resolves with its exit code. */
  async stop(): Promise<number | null> {
    if (!this.alive) return this.exitCode ?? null
    const exited = once(this.child, 'exit')
    this.child.stdin.end()
    await exited
    return this.exitCode ?? null
  }

  errorLines(): Line[] {
    return this.lines.filter((line) => line.type === 'error')
  }
}

/** Fails instead of hanging when a promise does not settle. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A peer with write access: it creates the name `big` (an empty text,
 * persisted by the server), then sends one change inserting `characters`
 * characters into it.
 */
async function attacker(url: string, characters: number): Promise<Peer> {
  const mallory = await createPeer({ agentId: 'mallory' })
  const big = await mallory.automerge<{ text: string }>('big')
  big.change((doc) => {
    doc.text = ''
  })
  await mallory.connect(url)
  await within(mallory.flush({ acks: 1 }), 20_000, "the attacker's first, small write")
  big.change((doc) => {
    A.splice(doc, ['text'], 0, 0, 'x'.repeat(characters))
  })
  return mallory
}

test('a delta that traps Automerge is refused, Automerge is reloaded, and every other Automerge name of the server keeps working', {
  timeout: 120_000,
}, async () => {
  const dir = await tempDir('concord-trap-')
  // 512 wasm pages (32 MiB): a 300,000-character insert exhausts it, as 10 million characters exhaust 4 GB.
  const server = new ServerProcess({ dir: dir.path }, ['--wasm-max-mem-pages=512'])
  const peers: Peer[] = []
  try {
    const url = await server.url()
    const writer = await createPeer({ agentId: 'writer' })
    peers.push(writer)
    const notes = await writer.automerge<{ items: string[] }>('notes')
    notes.change((doc) => {
      doc.items = ['before the attack']
    })
    await writer.connect(url)
    await within(writer.flush({ acks: 1 }), 20_000, 'flush before the attack')

    const mallory = await attacker(url, 300_000)
    peers.push(mallory)
    await until(async () => (await server.stats()).recoveries >= 1, 'the server reloads Automerge', 30_000)
    await until(() => server.lines.some((line) => line.type === 'write-refused' && line.name === 'big'), 'the delta is refused')
    const refusal = server.lines.find((line) => line.type === 'write-refused' && line.name === 'big')!
    assert.equal(refusal.code, ErrorCodes.DECODE_ERROR)

    // Normal use of the other Automerge names, after the trap.
    notes.change((doc) => {
      doc.items.push('after the attack')
    })
    const other = await writer.automerge<{ n: number }>('other')
    other.change((doc) => {
      doc.n = 42
    })
    await within(writer.flush({ acks: 1 }), 20_000, 'flush after the attack')
    const reader = await createPeer({ agentId: 'reader' })
    peers.push(reader)
    await reader.connect(url)
    const readNotes = await reader.automerge<{ items: string[] }>('notes')
    const readOther = await reader.automerge<{ n: number }>('other')
    await until(
      () => JSON.stringify(readNotes.value()) === JSON.stringify(notes.value()) && JSON.stringify(readOther.value()) === JSON.stringify(other.value()),
      'a new peer syncs the other documents',
      20_000,
    )
    assert.deepEqual(readNotes.value(), { items: ['before the attack', 'after the attack'] })
    for (const line of server.errorLines()) assert.match(String(line.code), /^CONCORD_/, `error event without a code: ${JSON.stringify(line)}`)
    assert.ok(server.alive)

    for (const peer of peers.splice(0)) await peer.close()
    assert.equal(await server.stop(), 0)
    const store = await openStore({ dir: dir.path, agentId: 'server', sweepMs: 0 })
    try {
      assert.deepEqual((await store.open('big', 'automerge')).value(), { text: '' }, "nothing of the attacker's delta was stored")
      assert.deepEqual((await store.open('notes', 'automerge')).value(), { items: ['before the attack', 'after the attack'] })
      assert.deepEqual((await store.open('other', 'automerge')).value(), { n: 42 })
    } finally {
      await store.close()
    }
  } finally {
    for (const peer of peers) await peer.close().catch(() => undefined)
    await server.stop()
    await dir.remove()
  }
})

test('a delta over maxOperations is refused with CONCORD_LIMIT_EXCEEDED before Automerge runs', { timeout: 120_000 }, async () => {
  const dir = await tempDir('concord-limit-')
  const server = new ServerProcess({ dir: dir.path, documentLimits: { maxOperations: 100_000 } }, ['--wasm-max-mem-pages=512'])
  const peers: Peer[] = []
  try {
    const url = await server.url()
    const mallory = await attacker(url, 300_000)
    peers.push(mallory)
    await until(() => server.lines.some((line) => line.type === 'write-refused' && line.name === 'big'), 'the delta is refused', 30_000)
    const refusal = server.lines.find((line) => line.type === 'write-refused' && line.name === 'big')!
    assert.equal(refusal.code, ErrorCodes.LIMIT_EXCEEDED)
    assert.equal((await server.stats()).recoveries, 0, 'Automerge never saw the delta (it would have trapped)')
    // The attacker's session stays up (a refused write, not a broken protocol) and its next, small write lands.
    const small = await mallory.automerge<{ n: number }>('small')
    small.change((doc) => {
      doc.n = 1
    })
    await within(mallory.flush({ acks: 1 }), 20_000, 'a small write after the refusal')
    for (const peer of peers.splice(0)) await peer.close()
    assert.equal(await server.stop(), 0)
    const store = await openStore({ dir: dir.path, agentId: 'server', sweepMs: 0 })
    try {
      assert.deepEqual((await store.open('big', 'automerge')).value(), { text: '' })
      assert.deepEqual((await store.open('small', 'automerge')).value(), { n: 1 })
    } finally {
      await store.close()
    }
  } finally {
    for (const peer of peers) await peer.close().catch(() => undefined)
    await server.stop()
    await dir.remove()
  }
})

/** A sync host that holds nothing and sends, as live commits, whatever the test pushes (out of order on purpose). */
class FloodHost implements SyncHost {
  private readonly commits = new Emitter<{ commit: LocalCommit }>()
  list() {
    return []
  }
  typeOf() {
    return undefined
  }
  version(): Uint8Array {
    throw new Error('holds nothing')
  }
  deltaSince() {
    return null
  }
  async applyRemote() {
    return { changed: [] }
  }
  subscribe(listener: (commit: LocalCommit) => void) {
    return this.commits.on('commit', listener)
  }
  authenticate() {
    return true
  }
  access() {
    return 'write' as const
  }
  push(name: string, delta: Uint8Array): void {
    this.commits.emit('commit', { entries: [{ name, replicaType: 'yjs', delta }] })
  }
}

test('Yjs updates waiting for a missing dependency are held within the budget, the rest dropped and counted; anti-entropy converges later', {
  timeout: 120_000,
}, async () => {
  const dir = await tempDir('concord-waiting-')
  const server = new ServerProcess({ dir: dir.path, documentLimits: { maxWaitingUpdates: 100 } })
  const peers: Peer[] = []
  const transport = new WebSocketTransport()
  try {
    const url = await server.url()
    // The writer types 300 updates while offline; the flood relays all but the first.
    const writer = await createPeer({ agentId: 'writer' })
    peers.push(writer)
    const flood = (await writer.yjs('flood')) as YjsReplica
    const updates: Uint8Array[] = []
    const source = new Y.Doc()
    source.on('update', (update: Uint8Array) => updates.push(update))
    const text = source.getText('t')
    for (let i = 0; i < 300; i++) text.insert(text.length, `line ${i} ${'.'.repeat(200)}\n`)
    Y.applyUpdate(flood.doc, Y.encodeStateAsUpdate(source))

    const host = new FloodHost()
    const connection = await transport.dial(url)
    const session = attachSession(connection, host, { agentId: toPeerId('relay'), maxQueuedCommits: 1000, window: 1000 })
    await new Promise((resolve) => session.events.once('synced', resolve))
    // Live commits flow once the relay answered the server's own anti-entropy (it holds nothing to answer
    // with: a commit made before is not sent), and the server is synced with the relay only after that.
    await until(async () => ((await server.stats()).synced as string[]).includes('relay'), 'the server synced with the relay')
    for (const update of updates.slice(1)) host.push('flood', update)
    await until(
      async () => {
        const { waiting } = await server.stats()
        return waiting.updates + waiting.dropped >= 299
      },
      'the server holds or drops every waiting update',
      30_000,
    )
    const { waiting } = await server.stats()
    assert.equal(waiting.updates, 100, 'held within the per-name budget')
    assert.equal(waiting.dropped, 199, 'the rest dropped and counted')
    assert.ok(waiting.bytes > 0)

    // The writer comes: its anti-entropy brings the dependency and what was dropped.
    await writer.connect(url)
    await within(writer.flush({ acks: 1 }), 20_000, "the writer's state is persisted by the server")
    const reader = await createPeer({ agentId: 'reader' })
    peers.push(reader)
    await reader.connect(url)
    const read = (await reader.yjs('flood')) as YjsReplica
    await until(() => read.doc.getText('t').toString() === text.toString(), 'a reader gets the whole document', 20_000)
    const after = (await server.stats()).waiting
    assert.equal(after.updates, 0, 'nothing waits any more')
    assert.equal(after.released, 100)
    session.close('done')
    for (const peer of peers.splice(0)) await peer.close()
    assert.equal(await server.stop(), 0)
    const store = await openStore({ dir: dir.path, agentId: 'server', sweepMs: 0 })
    try {
      assert.equal(((await store.open('flood', 'yjs')) as YjsReplica).doc.getText('t').toString(), text.toString())
    } finally {
      await store.close()
    }
  } finally {
    for (const peer of peers) await peer.close().catch(() => undefined)
    await transport.stop()
    await server.stop()
    await dir.remove()
  }
})
