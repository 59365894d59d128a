/**
 * What the documents of a W2-style first sync (bench/peers/w2-child.ts) hold,
 * for each contender: how the hub builds document `i`, the change it makes
 * while the client is away, and how a side tells it holds both.
 *
 * - `tasks` (W2, bench/peers.bench.ts): a task (title, done, notes) created
 *   in one change, then notes typed in 10 more; Automerge documents for
 *   `concord` and `automerge-repo`, Yjs documents (a map and a text, one
 *   transaction per change) for `concord-yjs` and `y-websocket`. Documents 0
 *   to 9 change; created one by one; Concord's client in sync durability
 *   (async with W2_ASYNC=1).
 * - `counter` (many-names counters, bench/many-names.bench.ts): Concord a
 *   PN-counter incremented once (`concord`); automerge-repo an Automerge
 *   document `{ n: Counter(1) }` made in one change (`repo.create` with that
 *   value), incremented by 1 as the change; y-websocket a Yjs document whose
 *   map `c` holds `n = 1` (Yjs has no counter: the nearest equivalent), set to
 *   2 as the change.
 * - `text` (many-names Yjs documents): a Yjs document whose text `t` holds
 *   `r0 ` (`concord-yjs`, `y-websocket`), `r1 ` inserted at 0 as the change;
 *   automerge-repo an Automerge document `{ t: 'r0 ' }` (one change, a text),
 *   `r1 ` spliced in at 0.
 *
 * For `counter` and `text`, as many-names does: 10 documents spread over
 * the range change (document `floor(k * docs / 10)`), the documents are
 * created 1,000 at a time (Concord `openMany` then one change each; y-leveldb
 * the updates of 1,000 documents stored concurrently), and both Concord
 * sides run in async durability (rpoMs 100) with `cacheSize` 256.
 */
import { Counter, splice } from '@automerge/automerge'
import type * as Y from 'yjs'
import type { ReplicaType } from '../../crdt/catalog.ts'

/** A document of an Automerge workload, as a change function or `doc()` sees it. */
// biome-ignore lint/suspicious/noExplicitAny: each workload's documents have their own shape
export type AutomergeDoc = Record<string, any>

/** An Automerge workload as automerge-repo (and Concord's Automerge type) runs it. */
export interface AutomergeModel {
  /** Document `i`'s initial value, made in one change (`repo.create(value)`); without it, an empty document and {@link build}. */
  initial?(i: number): AutomergeDoc
  /** Makes document `i` through `change`, after {@link initial}. */
  build(change: (fn: (doc: AutomergeDoc) => void) => void, i: number): void
  /** The hub's change while the client is away (a change function). */
  change(doc: AutomergeDoc): void
  complete(doc: AutomergeDoc | undefined): boolean
  caughtUp(doc: AutomergeDoc | undefined): boolean
}

/** A Yjs workload as y-websocket (and Concord's Yjs type) runs it. */
export interface YjsModel {
  build(doc: Y.Doc, i: number): void
  change(doc: Y.Doc): void
  complete(doc: Y.Doc): boolean
  caughtUp(doc: Y.Doc): boolean
}

/** Concord's side of a workload: the type of its names and how a replica is built, changed and read. */
export interface ConcordDocs {
  readonly type: ReplicaType
  build(replica: unknown, i: number): void
  change(replica: unknown): void
  complete(replica: unknown): boolean
  caughtUp(replica: unknown): boolean
  /** For an error message. */
  show(replica: unknown): string
}

export interface Workload {
  readonly automerge: AutomergeModel
  readonly yjs: YjsModel
  /** Concord's documents by contender kind (`concord`, `concord-yjs`), where the workload has them. */
  readonly concord: Partial<Record<'concord' | 'concord-yjs', ConcordDocs>>
  /** The documents the hub changes while the client is away. */
  changed(docs: number): number[]
  /** Documents created at once (1: one by one). */
  readonly createBatch: number
  /** Options of both Concord peers (beside their durability). */
  readonly concordOptions: { readonly cacheSize?: number }
  /** Whether Concord's client runs in async durability (rpoMs 100), as the hub always does. */
  readonly concordClientAsync: boolean
}

/** Concord's Automerge type running `model`. */
function concordAutomerge(model: AutomergeModel): ConcordDocs {
  type Doc = { change(fn: (doc: AutomergeDoc) => void): boolean; doc: AutomergeDoc }
  return {
    type: 'automerge',
    build: (replica, i) => model.build((fn) => (replica as Doc).change(fn), i),
    change: (replica) => (replica as Doc).change(model.change),
    complete: (replica) => model.complete((replica as Doc).doc),
    caughtUp: (replica) => model.caughtUp((replica as Doc).doc),
    show: (replica) => JSON.stringify((replica as Doc).doc),
  }
}

/** Concord's Yjs type running `model`. */
function concordYjs(model: YjsModel): ConcordDocs {
  const doc = (replica: unknown) => (replica as { doc: Y.Doc }).doc
  return {
    type: 'yjs',
    build: (replica, i) => model.build(doc(replica), i),
    change: (replica) => model.change(doc(replica)),
    complete: (replica) => model.complete(doc(replica)),
    caughtUp: (replica) => model.caughtUp(doc(replica)),
    show: (replica) => JSON.stringify(doc(replica).toJSON()),
  }
}

const WAS_AWAY = 'changed while you were away; '

const taskAutomerge: AutomergeModel = {
  build(change, i) {
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
  },
  change(doc) {
    doc.notes += WAS_AWAY
  },
  complete: (doc) => String(doc?.notes ?? '').includes('step 9'),
  caughtUp: (doc) => String(doc?.notes ?? '').includes(WAS_AWAY),
}

const taskYjs: YjsModel = {
  build(doc, i) {
    doc.transact(() => {
      doc.getMap('task').set('title', `task ${i}`)
      doc.getMap('task').set('done', false)
    })
    const notes = doc.getText('notes')
    for (let k = 0; k < 10; k++) notes.insert(notes.length, `step ${k}; `)
  },
  change: (doc) => doc.getText('notes').insert(doc.getText('notes').length, WAS_AWAY),
  complete: (doc) => doc.getText('notes').toString().includes('step 9'),
  caughtUp: (doc) => doc.getText('notes').toString().includes(WAS_AWAY),
}

/** Ten documents spread over `docs`, as many-names changes them. */
const spread = (docs: number) => Array.from({ length: 10 }, (_, k) => Math.floor((k * docs) / 10))
const manyNames = { createBatch: 1000, concordOptions: { cacheSize: 256 }, concordClientAsync: true, changed: spread } as const

const counterValue = (doc: AutomergeDoc | undefined) => Number((doc?.n as Counter | undefined)?.value ?? 0)
const mapValue = (doc: Y.Doc) => Number(doc.getMap('c').get('n') ?? 0)
/** many-names's Yjs document: a text `t`. */
const textYjs: YjsModel = {
  build: (doc) => doc.getText('t').insert(0, 'r0 '),
  change: (doc) => doc.getText('t').insert(0, 'r1 '),
  complete: (doc) => doc.getText('t').toString().includes('r0 '),
  caughtUp: (doc) => doc.getText('t').toString().includes('r1 '),
}
type PNCounter = { increment(): boolean; value(): number }

const workloads: Record<string, Workload> = {
  tasks: {
    automerge: taskAutomerge,
    yjs: taskYjs,
    concord: { concord: concordAutomerge(taskAutomerge), 'concord-yjs': concordYjs(taskYjs) },
    changed: () => Array.from({ length: 10 }, (_, i) => i),
    createBatch: 1,
    concordOptions: {},
    concordClientAsync: false,
  },
  counter: {
    automerge: {
      initial: () => ({ n: new Counter(1) }),
      build: () => undefined,
      change: (doc) => (doc.n as Counter).increment(1),
      complete: (doc) => counterValue(doc) >= 1,
      caughtUp: (doc) => counterValue(doc) >= 2,
    },
    yjs: {
      build: (doc) => doc.getMap('c').set('n', 1),
      change: (doc) => doc.getMap('c').set('n', mapValue(doc) + 1),
      complete: (doc) => mapValue(doc) >= 1,
      caughtUp: (doc) => mapValue(doc) >= 2,
    },
    concord: {
      concord: {
        type: 'pncounter',
        build: (replica) => (replica as PNCounter).increment(),
        change: (replica) => (replica as PNCounter).increment(),
        complete: (replica) => (replica as PNCounter).value() >= 1,
        caughtUp: (replica) => (replica as PNCounter).value() >= 2,
        show: (replica) => String((replica as PNCounter).value()),
      },
    },
    ...manyNames,
  },
  text: {
    automerge: {
      initial: () => ({ t: 'r0 ' }),
      build: () => undefined,
      change: (doc) => splice(doc, ['t'], 0, 0, 'r1 '),
      complete: (doc) => String(doc?.t ?? '').includes('r0 '),
      caughtUp: (doc) => String(doc?.t ?? '').includes('r1 '),
    },
    yjs: textYjs,
    concord: { 'concord-yjs': concordYjs(textYjs) },
    ...manyNames,
  },
}

/** The workload called `name` (`tasks`, `counter`, `text`). */
export function workloadOf(name: string): Workload {
  const workload = workloads[name]
  if (!workload) throw new Error(`w2: unknown workload ${name}`)
  return workload
}

export type WorkloadName = 'tasks' | 'counter' | 'text'
