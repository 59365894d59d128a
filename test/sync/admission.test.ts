/**
 * The admission (sync/admission.ts) over an in-memory host: the order of
 * its decisions (credentials, access, type, limits, validation, apply), a
 * rule that throws or answers nonsense refuses, a refused unit applies
 * nothing, and opening a name a peer may not read looks exactly like
 * opening one that does not exist.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ErrorCodes } from '../../crdt/errors.ts'
import { Admission } from '../../sync/admission.ts'
import type { DeltaEntry } from '../../sync/messages.ts'
import { agentId } from '../../crdt/agent-id.ts'
import { MemoryHost } from './helpers/memory-host.ts'

const alice = agentId('alice')
const bob = agentId('bob')

/** A host where bob may only read `ro/*`, nobody sees `hidden/*`, and alice may write the rest. */
function setup(options: ConstructorParameters<typeof Admission>[1] = {}) {
  const host = new MemoryHost('local', {
    token: 'secret',
    access: (peer, name) => {
      if (name.startsWith('hidden/')) return 'none'
      if (name === 'throws') throw new Error('rule failed')
      if (name === 'nonsense') return 'all' as never
      return peer === 'bob' && name.startsWith('ro/') ? 'read' : 'write'
    },
  })
  host.open('counter', 'pncounter')
  host.open('hidden/counter', 'pncounter')
  const source = new MemoryHost('remote')
  return { host, source, admission: new Admission(host, options) }
}

/** A real delta of `type` for `name`, made on `source`. */
function deltaOf(source: MemoryHost, name: string, type: 'pncounter' | 'gset'): DeltaEntry {
  let entry: DeltaEntry | undefined
  const off = source.subscribe((commit) => {
    entry = commit.entries[0]
  })
  const replica = source.open(name, type) as unknown as { increment?(n: number): void; add?(v: string): void }
  if (type === 'pncounter') replica.increment!(1)
  else replica.add!('x')
  off()
  return entry!
}

test('admission: credentials are checked once, a throwing check refuses, counts are kept', async () => {
  const { admission } = setup()
  const bearer = (token: string) => ({ scheme: 'bearer', token }) as const
  assert.equal(await admission.authenticate(alice, bearer('secret')), true)
  assert.equal(await admission.authenticate(alice, bearer('wrong')), false)
  const throwing = admission.withCredentials(() => {
    throw new Error('boom')
  })
  assert.equal(await throwing.authenticate(alice, bearer('secret')), false)
  assert.deepEqual([admission.stats.authenticated, admission.stats.credentialsRefused], [1, 2], 'siblings share the counters')
})

test('admission: reads follow access; a rule that throws or answers nonsense is none; an unidentified party reads only when allowed', () => {
  const { admission } = setup()
  assert.equal(admission.mayRead(bob, 'ro/x'), true)
  assert.equal(admission.mayRead(bob, 'hidden/x'), false)
  assert.equal(admission.mayRead(bob, 'throws'), false)
  assert.equal(admission.mayRead(bob, 'nonsense'), false)
  assert.equal(admission.mayRead(undefined, 'ro/x'), false)
  assert.equal(setup({ anonymousReads: true }).admission.mayRead(undefined, 'ro/x'), true)
  assert.deepEqual(
    admission.readable(bob, [{ name: 'a' }, { name: 'hidden/b' }, { name: 'ro/c' }]).map((e) => e.name),
    ['a', 'ro/c'],
  )
})

test('admission: a write is refused in order (name, filter, access, type, limits) and a refused unit applies nothing', async () => {
  const { host, source, admission } = setup({ maxUnitBytes: 4096 })
  const good = deltaOf(source, 'fresh', 'gset')
  const counterDelta = deltaOf(source, 'counter', 'pncounter')
  const codeOf = async (peer: typeof alice, entries: DeltaEntry[]) => {
    const admitted = await admission.admit(peer, entries, undefined)
    return 'refused' in admitted ? admitted.refused.code : 'applied'
  }
  // access before type: a reader learns nothing about the type of a name it may not write
  assert.equal(await codeOf(bob, [{ ...good, name: 'hidden/x', replicaType: 'pncounter' }]), ErrorCodes.FORBIDDEN)
  assert.equal(await codeOf(bob, [{ ...good, name: 'ro/x' }]), ErrorCodes.FORBIDDEN)
  assert.equal(await codeOf(alice, [{ ...counterDelta, replicaType: 'gset' }]), ErrorCodes.TYPE_MISMATCH)
  assert.equal(await codeOf(alice, [{ ...good, name: '' }]), ErrorCodes.INVALID_ARGUMENT)
  assert.equal(await codeOf(alice, [{ ...good, delta: new Uint8Array(5000) }]), ErrorCodes.LIMIT_EXCEEDED)
  assert.equal(await codeOf(alice, [good, { ...good, replicaType: 'pncounter' }]), ErrorCodes.PROTOCOL_ERROR)
  // a unit with one bad entry (an undecodable delta): nothing of it is applied
  assert.equal(await codeOf(alice, [good, { ...counterDelta, delta: new Uint8Array([1, 255, 255]) }]), ErrorCodes.DECODE_ERROR)
  assert.equal(host.replicas.has('fresh'), false, 'the good entry of a refused unit was not applied')
  assert.equal(await codeOf(alice, [good, counterDelta]), 'applied')
  const narrow = setup({ filter: { prefixes: ['ok/'] } }).admission
  const outside = await narrow.admit(alice, [good], undefined)
  assert.ok('refused' in outside && outside.refused.code === ErrorCodes.FORBIDDEN && /outside the requested names/.test(outside.refused.message))
  assert.deepEqual(host.replicas.get('fresh')!.value() as string[], ['x'])
  assert.deepEqual(
    [admission.stats.forbidden, admission.stats.typeMismatch, admission.stats.overLimit, admission.stats.invalid, admission.stats.admitted],
    [2, 1, 1, 3, 1],
  )
})

test('admission: a name a peer may not read opens exactly as one that does not exist; only a writer opens an absent name', async () => {
  const { admission } = setup()
  const hidden = await admission.openName(bob, 'hidden/plan', 'yjs')
  const absent = await admission.openName(bob, 'ro/absent', 'yjs')
  const words = (opened: typeof hidden) => ('refused' in opened ? { ...opened.refused, name: undefined } : opened)
  assert.deepEqual(words(hidden), words(absent), 'the same refusal, word for word')
  assert.ok('refused' in hidden && hidden.refused.code === ErrorCodes.NOT_FOUND)
  assert.deepEqual(await admission.openName(alice, 'new-doc', 'yjs'), { access: 'write' })
  const mismatch = await admission.openName(alice, 'counter', 'yjs')
  assert.ok('refused' in mismatch && mismatch.refused.code === ErrorCodes.TYPE_MISMATCH)
  const hiddenCounter = await admission.openName(bob, 'hidden/counter', 'yjs')
  assert.ok('refused' in hiddenCounter && hiddenCounter.refused.code === ErrorCodes.NOT_FOUND, 'the type is checked only for a reader')
})

test('admission: opening to write (a door that changes a name for its client) refuses a reader as a session write is refused, and an invisible name as an absent one', async () => {
  const { admission, host } = setup()
  host.open('ro/notes', 'pncounter')
  const forbiddenBefore = admission.stats.forbidden
  const reader = await admission.openName(bob, 'ro/notes', 'pncounter', 'write')
  assert.ok('refused' in reader && reader.refused.code === ErrorCodes.FORBIDDEN)
  assert.equal(reader.refused.message, 'peer "bob" may not write "ro/notes"')
  assert.deepEqual(await admission.openName(bob, 'ro/notes', 'pncounter', 'read'), { access: 'read' })
  const hidden = await admission.openName(bob, 'hidden/counter', 'pncounter', 'write')
  assert.ok('refused' in hidden && hidden.refused.code === ErrorCodes.NOT_FOUND, 'invisible: not found, not forbidden')
  assert.deepEqual(await admission.openName(alice, 'counter', 'pncounter', 'write'), { access: 'write' })
  assert.equal(admission.stats.forbidden, forbiddenBefore + 2, 'both refusals counted')
})
