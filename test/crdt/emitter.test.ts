import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Emitter } from '../../crdt/emitter.ts'

type Events = { ping: number; pong: string }

test('emitter: listeners run in the order added, once each however often added; off and the unsubscribe remove one', () => {
  const emitter = new Emitter<Events>()
  const calls: string[] = []
  const a = (n: number) => calls.push(`a${n}`)
  const b = (n: number) => calls.push(`b${n}`)
  const offA = emitter.on('ping', a)
  emitter.on('ping', b)
  emitter.on('ping', a)
  assert.equal(emitter.listenerCount('ping'), 2)
  assert.equal(emitter.listenerCount('pong'), 0)
  emitter.emit('ping', 1)
  offA()
  emitter.emit('ping', 2)
  emitter.off('ping', b)
  emitter.off('ping', b)
  emitter.emit('ping', 3)
  emitter.emit('pong', 'x')
  assert.deepEqual(calls, ['a1', 'b1', 'b2'])
  assert.equal(emitter.listenerCount('ping'), 0)
})

test('emitter: a listener added while an event is emitted runs from the next emit; one removed meanwhile still runs in this one', () => {
  const emitter = new Emitter<Events>()
  const calls: string[] = []
  const late = (n: number) => calls.push(`late${n}`)
  const second = (n: number) => calls.push(`second${n}`)
  emitter.on('ping', (n) => {
    calls.push(`first${n}`)
    if (n === 1) {
      emitter.on('ping', late)
      emitter.off('ping', second)
    }
  })
  emitter.on('ping', second)
  emitter.emit('ping', 1)
  emitter.emit('ping', 2)
  assert.deepEqual(calls, ['first1', 'second1', 'first2', 'late2'])
})

test('emitter: once runs one time and off removes it by the listener given; a throwing listener is reported and the others run', () => {
  const emitter = new Emitter<Events>()
  const calls: string[] = []
  const once = (n: number) => calls.push(`once${n}`)
  emitter.once('ping', once)
  emitter.emit('ping', 1)
  emitter.emit('ping', 2)
  const removed = (n: number) => calls.push(`removed${n}`)
  emitter.once('ping', removed)
  emitter.off('ping', removed)
  emitter.emit('ping', 3)
  const errors: Array<[unknown, string]> = []
  emitter.onListenerError = (error, event) => errors.push([error, String(event)])
  const boom = new Error('boom')
  emitter.on('pong', () => {
    throw boom
  })
  emitter.on('pong', (s) => calls.push(`pong ${s}`))
  emitter.emit('pong', 'x')
  assert.deepEqual(calls, ['once1', 'pong x'])
  assert.deepEqual(errors, [[boom, 'pong']])
})

test('emitter: several events keep their own listeners, whichever was listened to first and whichever lost all of its own', () => {
  const emitter = new Emitter<Events & { third: boolean }>()
  const calls: string[] = []
  const a = (n: number) => calls.push(`a${n}`)
  const b = (s: string) => calls.push(`b${s}`)
  const c = (n: number) => calls.push(`c${n}`)
  const d = (s: string) => calls.push(`d${s}`)
  const e = (t: boolean) => calls.push(`e${t}`)
  emitter.on('ping', a)
  emitter.on('pong', b)
  emitter.off('ping', a)
  emitter.on('third', e)
  emitter.on('ping', c)
  emitter.on('pong', d)
  emitter.emit('ping', 1)
  emitter.emit('pong', 'x')
  emitter.emit('third', true)
  emitter.off('third', e)
  emitter.off('pong', b)
  emitter.emit('third', false)
  emitter.emit('pong', 'y')
  assert.deepEqual(calls, ['c1', 'bx', 'dx', 'etrue', 'dy'])
  assert.deepEqual([emitter.listenerCount('ping'), emitter.listenerCount('pong'), emitter.listenerCount('third')], [1, 1, 0])
})
