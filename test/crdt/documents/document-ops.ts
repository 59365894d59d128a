/**
 * Random local operations on the document replicas, for the shared law
 * suite and the document tests: Yjs text inserts/deletes (with emoji),
 * map sets/deletes (JSON values and nested maps), array pushes/deletes;
 * Automerge text splices, map sets/deletes, list pushes/deletes, counters.
 */
import fc from 'fast-check'
import * as A from '@automerge/automerge'
import * as Y from 'yjs'
import type { YjsReplica } from '../../../crdt/documents/yjs-replica.ts'
import type { AutomergeReplica } from '../../../crdt/documents/automerge-replica.ts'
import type { Replica } from '../../../crdt/replica.ts'

const key = fc.constantFrom('a', 'b', 'c', 'd')
const text = fc.oneof(fc.string({ minLength: 1, maxLength: 5 }), fc.constantFrom('😀', 'é', 'ab😀'))
const json = fc
  .oneof(
    fc.integer({ min: -1000, max: 1000 }),
    fc.string({ maxLength: 4 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3 }),
    fc.record({ x: fc.integer({ min: 0, max: 9 }) }),
  )
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown) // plain prototypes: fast-check may build null-prototype objects

/** Clamps a random natural to 0..max. */
function within(n: number, max: number): number {
  return max <= 0 ? 0 : n % (max + 1)
}

/** Random local operations on a {@link YjsReplica} (top-level `text`, `map`, `list`). */
export const yjsOp: fc.Arbitrary<(replica: Replica) => void> = fc.oneof(
  fc.record({ at: fc.nat(), value: text }).map(({ at, value }) => (replica: Replica) => {
    const t = (replica as YjsReplica).doc.getText('text')
    t.insert(within(at, t.length), value)
  }),
  fc.record({ at: fc.nat(), count: fc.integer({ min: 1, max: 4 }) }).map(({ at, count }) => (replica: Replica) => {
    const t = (replica as YjsReplica).doc.getText('text')
    if (t.length === 0) return
    const from = within(at, t.length - 1)
    t.delete(from, Math.min(count, t.length - from))
  }),
  fc.record({ k: key, value: json }).map(({ k, value }) => (replica: Replica) => {
    ;(replica as YjsReplica).doc.getMap('map').set(k, value)
  }),
  fc.record({ k: key, inner: key, value: json }).map(({ k, inner, value }) => (replica: Replica) => {
    const map = (replica as YjsReplica).doc.getMap('map')
    let nested = map.get(k)
    if (!(nested instanceof Y.Map)) {
      nested = new Y.Map()
      map.set(k, nested)
    }
    ;(nested as Y.Map<unknown>).set(inner, value)
  }),
  key.map((k) => (replica: Replica) => {
    ;(replica as YjsReplica).doc.getMap('map').delete(k)
  }),
  fc.array(json, { minLength: 1, maxLength: 3 }).map((values) => (replica: Replica) => {
    ;(replica as YjsReplica).doc.getArray('list').push(values)
  }),
  fc.nat().map((at) => (replica: Replica) => {
    const list = (replica as YjsReplica).doc.getArray('list')
    if (list.length > 0) list.delete(within(at, list.length - 1), 1)
  }),
  fc.array(text, { minLength: 2, maxLength: 3 }).map((values) => (replica: Replica) => {
    const doc = (replica as YjsReplica).doc
    doc.transact(() => {
      for (const value of values) doc.getText('text').insert(0, value)
    })
  }),
)

/** The document shape the Automerge ops edit. */
export interface OpsDoc {
  text: string
  map: Record<string, unknown>
  list: unknown[]
  count: A.Counter
}

/** The initial value every Automerge replica of the law suite shares. */
export function opsInitial(): OpsDoc {
  return { text: '', map: {}, list: [], count: new A.Counter(0) }
}

/** Random local changes on an {@link AutomergeReplica} of {@link OpsDoc}. */
export const automergeOp: fc.Arbitrary<(replica: Replica) => void> = fc.oneof(
  fc.record({ at: fc.nat(), value: text }).map(({ at, value }) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      A.splice(doc, ['text'], within(at, doc.text.length), 0, value)
    })
  }),
  fc.record({ at: fc.nat(), count: fc.integer({ min: 1, max: 4 }) }).map(({ at, count }) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      if (doc.text.length === 0) return
      const from = within(at, doc.text.length - 1)
      A.splice(doc, ['text'], from, Math.min(count, doc.text.length - from))
    })
  }),
  fc.record({ k: key, value: json }).map(({ k, value }) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      doc.map[k] = value
    })
  }),
  key.map((k) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      delete doc.map[k]
    })
  }),
  json.map((value) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      doc.list.push(value)
    })
  }),
  fc.nat().map((at) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      if (doc.list.length > 0) A.deleteAt(doc.list, within(at, doc.list.length - 1))
    })
  }),
  fc.integer({ min: -5, max: 5 }).map((by) => (replica: Replica) => {
    ;(replica as AutomergeReplica<OpsDoc>).change((doc) => {
      doc.count.increment(by)
    })
  }),
)
