/**
 * History queries on a recorded three-agent session (issue 16): agents ana,
 * bo and cy, each on its own peer (LevelDB folder), edit a Yjs text, an
 * OR-map and a counter through a hub over WebSocket, one change at a time,
 * each with a message. An independent model of the session (every
 * character labelled with the agent and record that typed it, every key
 * with its last setter, every increment with its agent) gives the expected
 * blame, diff and history, checked on the hub, on a leaf, and through the
 * CLI (`concord history`, `blame`, `diff`, with --json).
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Peer } from '../../peer/index.ts'
import type { Store } from '../../persistence/index.ts'
import { cli, cliJson } from '../cli/helpers.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { hubAndAgents, untilLoggedEverywhere } from './helpers.ts'

type Agent = 'ana' | 'bo' | 'cy'
interface Char {
  readonly ch: string
  readonly agent: Agent
  readonly seq: number
}

/** The independent model: the text as labelled characters, the map's last setters, the counter's increments. */
class Model {
  text: Char[] = []
  readonly textAt: string[] = ['']
  readonly keys = new Map<string, { agent: Agent; seq: number }>()
  readonly votes: Array<{ agent: Agent; amount: number }> = []
  insert(at: number, s: string, agent: Agent): void {
    const seq = this.textAt.length
    this.text.splice(at, 0, ...[...s].map((ch) => ({ ch, agent, seq })))
    this.textAt.push(this.plain())
  }
  delete(at: number, length: number): void {
    this.text.splice(at, length)
    this.textAt.push(this.plain())
  }
  plain(): string {
    return this.text.map((c) => c.ch).join('')
  }
  /** Blame: runs of characters by the record that typed them. */
  spans(): Array<[string, Agent, number]> {
    const out: Array<[string, Agent, number]> = []
    for (const c of this.text) {
      const last = out.at(-1)
      if (last && last[2] === c.seq) last[0] += c.ch
      else out.push([c.ch, c.agent, c.seq])
    }
    return out
  }
}

test('blame, diff and history of a three-agent session match an independent model, on the hub, a leaf and through the CLI', async () => {
  const dir = await tempDir('concord-queries-')
  let peers: Peer[] = []
  try {
    const session = await hubAndAgents(dir.path, ['ana', 'bo', 'cy'] as const)
    peers = session.peers
    const { hub, agents } = session
    const model = new Model()
    const messages = new Map<string, string>()
    let step = 0
    /** One change by `agent`, then every peer converged on it (the session is sequential). */
    const change = async (agent: Agent, name: string, fn: (peer: Peer) => Promise<void>): Promise<string> => {
      const message = `step ${++step} by ${agent}`
      const peer = agents.get(agent)!
      const before = peer.store.committedSeq(name)
      await fn(peer)
      const seq = peer.store.committedSeq(name)
      assert.equal(seq, before + 1, `step ${step}: one record`)
      messages.set(`${name}:${seq}`, message)
      await untilLoggedEverywhere(peers, name, seq, `step ${step} everywhere`)
      return message
    }
    const text = async (peer: Peer) => (await peer.yjs('doc')).doc.getText('t')
    const edit = (agent: Agent, op: (t: Awaited<ReturnType<typeof text>>) => void) =>
      change(agent, 'doc', async (peer) => {
        const t = await text(peer)
        await peer.transact(() => op(t), { message: `step ${step} by ${agent}` })
      })
    const setKey = (agent: Agent, key: string, value: string) =>
      change(agent, 'facts', async (peer) => {
        const map = await peer.map('facts')
        await peer.transact(() => map.set(key, value), { message: `step ${step} by ${agent}` })
      })
    const vote = (agent: Agent, amount: number) =>
      change(agent, 'votes', async (peer) => {
        const counter = await peer.counter('votes')
        await peer.transact(() => counter.increment(amount), { message: `step ${step} by ${agent}` })
      })

    await edit('ana', (t) => t.insert(0, 'Plan: '))
    model.insert(0, 'Plan: ', 'ana')
    await edit('bo', (t) => t.insert(t.length, 'gather data. '))
    model.insert(6, 'gather data. ', 'bo')
    await edit('cy', (t) => t.insert(t.length, 'write report. '))
    model.insert(19, 'write report. ', 'cy')
    await setKey('ana', 'owner', 'ana')
    model.keys.set('owner', { agent: 'ana', seq: 1 })
    await setKey('bo', 'status', 'draft')
    model.keys.set('status', { agent: 'bo', seq: 2 })
    await edit('cy', (t) => t.insert(19, 'quickly '))
    model.insert(19, 'quickly ', 'cy')
    await edit('ana', (t) => t.delete(6, 7))
    model.delete(6, 7)
    await setKey('cy', 'status', 'review')
    model.keys.set('status', { agent: 'cy', seq: 3 })
    for (const [agent, amount] of [
      ['ana', 2],
      ['bo', 1],
      ['cy', 3],
      ['bo', 1],
    ] as const) {
      await vote(agent, amount)
      model.votes.push({ agent, amount })
    }
    assert.equal((await text(hub)).toString(), model.plain())

    const check = async (store: Store, where: string): Promise<void> => {
      // history: authors and messages, filters
      const history = await store.history('doc')
      assert.deepEqual(
        history.map((h) => [h.seq, h.agent, h.message]),
        [
          [1, 'ana', messages.get('doc:1')],
          [2, 'bo', messages.get('doc:2')],
          [3, 'cy', messages.get('doc:3')],
          [4, 'cy', messages.get('doc:4')],
          [5, 'ana', messages.get('doc:5')],
        ],
        where,
      )
      assert.deepEqual(
        (await store.history('doc', { agent: 'cy' })).map((h) => h.seq),
        [3, 4],
      )
      const page1 = await store.historyPage('doc', { limit: 2 })
      const page2 = await store.historyPage('doc', { limit: 2, cursor: page1.cursor })
      const page3 = await store.historyPage('doc', { limit: 2, cursor: page2.cursor })
      assert.deepEqual(
        [page1, page2, page3].map((p) => p.entries.map((h) => h.seq)),
        [[1, 2], [3, 4], [5]],
      )
      assert.equal(page3.cursor, undefined)
      const third = history[2].hlc.wall
      assert.ok((await store.history('doc', { since: third })).every((h) => h.hlc.wall >= third))
      assert.ok((await store.history('doc', { until: third })).map((h) => h.seq).includes(1))

      // blame of the text: every span on the agent and record the model says
      const textBlame = await store.blame('doc')
      assert.equal(textBlame.blame.kind, 'text')
      if (textBlame.blame.kind !== 'text') return
      assert.deepEqual(
        textBlame.blame.spans.map((s) => [s.text, s.agent, (s as { seq?: number }).seq]),
        model.spans(),
        `${where}: text blame`,
      )
      assert.ok(
        textBlame.blame.spans.every((s) => s.agent === null || (s as { message?: string }).message === messages.get(`doc:${(s as { seq: number }).seq}`)),
      )

      // diff of the text between records 3 and 5: the spans turn the text at 3 into the text at 5, and are the words typed and deleted (a word diff may put the space on either side)
      const textDiff = await store.diff('doc', 3, 5)
      assert.equal(textDiff.changes.kind, 'document')
      if (textDiff.changes.kind !== 'document') return
      const [field] = textDiff.changes.fields
      assert.equal(field.field, 't')
      assert.equal(field.kind, 'text')
      if (field.kind !== 'text') return
      let rebuilt = model.textAt[3]
      for (const span of field.spans) {
        rebuilt =
          span.op === 'insert'
            ? rebuilt.slice(0, span.at) + span.text + rebuilt.slice(span.at)
            : rebuilt.slice(0, span.at) + rebuilt.slice(span.at + span.text.length)
      }
      assert.equal(rebuilt, model.textAt[5], `${where}: the spans rebuild the text at 5`)
      assert.deepEqual(
        field.spans.filter((s) => s.op === 'insert').map((s) => s.text.trim()),
        ['quickly'],
      )
      assert.deepEqual(
        field.spans.filter((s) => s.op === 'delete').map((s) => s.text.trim()),
        ['gather'],
      )
      assert.deepEqual(
        textDiff.records.map((r) => [r.seq, r.agent, r.message]),
        [
          [4, 'cy', messages.get('doc:4')],
          [5, 'ana', messages.get('doc:5')],
        ],
      )

      // the map: who set each key last; the keys a diff touches
      const mapBlame = await store.blame('facts')
      assert.equal(mapBlame.blame.kind, 'paths')
      if (mapBlame.blame.kind !== 'paths') return
      assert.deepEqual(
        mapBlame.blame.paths.map((p) => [p.path, p.agent, (p as { seq?: number }).seq]),
        [...model.keys].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, by]) => [`/${key}`, by.agent, by.seq]),
      )
      const mapDiff = await store.diff('facts', 1, 3)
      assert.deepEqual(mapDiff.changedKeys, ['status'])
      assert.deepEqual(mapDiff.changes, { kind: 'json', patch: [{ op: 'add', path: '/status', value: 'review' }] })
      assert.deepEqual((await store.diff('facts', 2, 3)).changes, { kind: 'json', patch: [{ op: 'replace', path: '/status', value: 'review' }] })

      // the counter: each agent's part
      const expectedParts = new Map<string, { amount: number; records: number }>()
      for (const v of model.votes) {
        const part = expectedParts.get(v.agent) ?? { amount: 0, records: 0 }
        part.amount += v.amount
        part.records++
        expectedParts.set(v.agent, part)
      }
      const counterDiff = await store.diff('votes', 0)
      assert.deepEqual(
        counterDiff.byAgent,
        [...expectedParts].map(([agent, p]) => ({ agent, delta: p.amount, records: p.records })).sort((a, b) => (a.agent < b.agent ? -1 : 1)),
      )
      assert.deepEqual(counterDiff.changes, { kind: 'counter', from: 0, to: 7, delta: 7 })
      const counterBlame = await store.blame('votes')
      assert.equal(counterBlame.blame.kind, 'counter')
      if (counterBlame.blame.kind !== 'counter') return
      assert.deepEqual(
        [...counterBlame.blame.contributions].sort((a, b) => (a.agent < b.agent ? -1 : 1)),
        [...expectedParts].map(([agent, p]) => ({ agent, ...p })).sort((a, b) => (a.agent < b.agent ? -1 : 1)),
      )
    }
    await check(hub.store, 'hub')
    await check(agents.get('bo')!.store, 'leaf bo')

    // The CLI reads the same from the hub's folder.
    for (const peer of peers.splice(0).reverse()) await peer.close()
    const hubDir = join(dir.path, 'hub')
    const history = await cliJson(['history', '--dir', hubDir, 'doc', '--agent', 'cy'])
    assert.equal(history.code, 0, history.stderr)
    assert.deepEqual(
      history.json.map((r: { seq: number; agent: string; message: string }) => [r.seq, r.agent, r.message]),
      [
        [3, 'cy', messages.get('doc:3')],
        [4, 'cy', messages.get('doc:4')],
      ],
    )
    const paged = await cli(['history', '--dir', hubDir, 'doc', '--limit', '2'])
    assert.match(paged.stderr, /more: --cursor f3/)
    assert.match(paged.stdout, /MESSAGE/)
    const blame = await cliJson(['blame', '--dir', hubDir, 'doc'])
    assert.equal(blame.code, 0, blame.stderr)
    assert.deepEqual(
      blame.json.blame.spans.map((s: { text: string; agent: string; seq: number }) => [s.text, s.agent, s.seq]),
      model.spans(),
    )
    const diff = await cliJson(['diff', '--dir', hubDir, 'votes', '0', '4'])
    assert.equal(diff.code, 0, diff.stderr)
    assert.equal(diff.json.changes.delta, 7)
    assert.equal((await cli(['diff', '--dir', hubDir, 'votes', '3', '9'])).code, 3)
    const human = await cli(['blame', '--dir', hubDir, 'facts'])
    assert.match(human.stdout, /\/status\s+cy @3 "step 8 by cy"/)
  } finally {
    for (const peer of peers.reverse()) await peer.close()
    await dir.remove()
  }
})
