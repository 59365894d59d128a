/**
 * Rebuilding a document name applies its records in merged runs
 * (persistence/names/replay.ts): a real LevelDB folder, Yjs and Automerge
 * names of hundreds of records each (insertions and deletions), reopened.
 * The state is the one the records give one by one (on open, at a seq in
 * the past, after a torn tail is cut), in a handful of document calls,
 * not one per record.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AutomergeReplica } from '../../crdt/documents/automerge-replica.ts'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { createReplica } from '../../crdt/registry.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { openStore, type ReplicaCreator } from '../../persistence/index.ts'
import { REPLAY_RUN_RECORDS } from '../../persistence/names/replay.ts'
import { tempDir } from './helpers.ts'

const RECORDS = 600

/** A replica creator that counts the deltas applied to replicas of document types. */
function countingCreator(): { create: ReplicaCreator; applied: Map<ReplicaType, number> } {
  const applied = new Map<ReplicaType, number>()
  const create: ReplicaCreator = (type, options) => {
    const replica = createReplica(type, options) as Replica
    if (type !== 'yjs' && type !== 'automerge') return replica
    const applyDelta = replica.applyDelta.bind(replica)
    replica.applyDelta = (delta, origin) => {
      applied.set(type, (applied.get(type) ?? 0) + 1)
      return applyDelta(delta, origin)
    }
    return replica
  }
  return { create, applied }
}

test(`names of ${RECORDS} document records each are rebuilt in merged runs: the same state on open, at a past seq and after a torn tail, in a few document calls`, async () => {
  const { dir, remove } = await tempDir()
  try {
    // No checkpoint: the whole log is replayed.
    const checkpoint = { everyRecords: 0, everyBytes: 0, everyMs: 0, onClose: false }
    const store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint })
    const notes = (await store.open('notes', 'yjs')) as YjsReplica
    const plan = (await store.open('plan', 'automerge')) as unknown as AutomergeReplica<{ items: string[] }>
    await store.atomic(() => plan.change((doc) => void (doc.items = [])))
    const textAt: string[] = ['']
    const itemsAt: string[] = [JSON.stringify(plan.value())]
    for (let i = 1; i < RECORDS; i++) {
      await store.atomic(() => {
        const text = notes.doc.getText('t')
        if (i % 5 === 0) text.delete(0, 2)
        else text.insert(text.length, `w${i} `)
        plan.change((doc) => {
          if (i % 7 === 0) doc.items.splice(0, 1)
          else doc.items.push(`item ${i}`)
        })
      })
      textAt.push(notes.doc.getText('t').toString())
      itemsAt.push(JSON.stringify(plan.value()))
    }
    // The Yjs name has one record fewer (none before the loop).
    await store.atomic(() => notes.doc.getText('t').insert(0, '> '))
    textAt.push(notes.doc.getText('t').toString())
    await store.flush()
    assert.equal(store.committedSeq('notes'), RECORDS)
    assert.equal(store.committedSeq('plan'), RECORDS)
    await store.close()

    const counting = countingCreator()
    const reopened = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint, createReplica: counting.create })
    const notesAgain = (await reopened.open('notes', 'yjs')) as YjsReplica
    const planAgain = (await reopened.open('plan', 'automerge')) as unknown as AutomergeReplica<{ items: string[] }>
    assert.equal(notesAgain.doc.getText('t').toString(), textAt[RECORDS])
    assert.equal(JSON.stringify(planAgain.value()), itemsAt[RECORDS - 1])
    const runs = Math.ceil(RECORDS / REPLAY_RUN_RECORDS)
    for (const type of ['yjs', 'automerge'] as const) {
      const calls = counting.applied.get(type) ?? 0
      assert.ok(calls >= 1 && calls <= runs, `${type}: ${calls} document calls for ${RECORDS} records (at most ${runs})`)
    }
    // Time travel replays in runs too, to exactly the seq asked for.
    for (const seq of [1, 257, 300, RECORDS - 1]) {
      const past = (await reopened.at('notes', seq)) as YjsReplica
      assert.equal(past.doc.getText('t').toString(), textAt[seq], `notes at ${seq}`)
      assert.equal(JSON.stringify((await reopened.at('plan', seq)).value()), itemsAt[seq - 1], `plan at ${seq}`)
    }
    await reopened.close()

    // A torn tail (the last record damaged): the state of the records before it, the tail cut.
    const storage = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint })
    await storage.storage.batch([{ type: 'put', key: logKey('notes', RECORDS), value: new Uint8Array([1, 2, 3]) }], { sync: true })
    await storage.close()
    const cut = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint })
    const notesCut = (await cut.open('notes', 'yjs')) as YjsReplica
    assert.equal(notesCut.doc.getText('t').toString(), textAt[RECORDS - 1])
    assert.equal(cut.committedSeq('notes'), RECORDS - 1)
    await cut.close()
  } finally {
    await remove()
  }
})
