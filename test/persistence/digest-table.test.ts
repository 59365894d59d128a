/**
 * The owner's table of digests of names not in memory
 * (persistence/names/digest-table.ts) against a Map of copies: sets,
 * overwrites, deletes (their slots taken again), growth past its first
 * pool, a digest of the wrong length (unknown), and copies handed out
 * that a later write does not change.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import fc from 'fast-check'
import { DigestTable } from '../../persistence/names/digest-table.ts'

it('answers as a map of copies, through sets, deletes, growth and clear', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.record({ op: fc.constant('set' as const), name: fc.integer({ min: 0, max: 3000 }), byte: fc.integer({ min: 0, max: 255 }) }),
          fc.record({ op: fc.constant('delete' as const), name: fc.integer({ min: 0, max: 3000 }) }),
          fc.record({ op: fc.constant('bad' as const), name: fc.integer({ min: 0, max: 3000 }) }),
        ),
        { maxLength: 3000 },
      ),
      (ops) => {
        const table = new DigestTable()
        const model = new Map<string, Uint8Array>()
        for (const step of ops) {
          const name = `n${step.name}`
          if (step.op === 'set') {
            const digest = new Uint8Array(16).fill(step.byte)
            digest[0] = step.name & 0xff
            table.set(name, digest)
            model.set(name, digest.slice())
          } else if (step.op === 'delete') {
            table.delete(name)
            model.delete(name)
          } else {
            table.set(name, new Uint8Array(15))
            model.delete(name)
          }
        }
        assert.equal(table.size, model.size)
        for (let i = 0; i <= 3000; i++) assert.deepEqual(table.get(`n${i}`), model.get(`n${i}`))
        table.clear()
        assert.equal(table.size, 0)
        assert.equal(table.get('n1'), undefined)
      },
    ),
    { seed: 19, numRuns: 60 },
  )
})

it('hands out copies: a later write to the slot does not change them', () => {
  const table = new DigestTable()
  table.set('a', new Uint8Array(16).fill(1))
  const held = table.get('a')!
  table.delete('a')
  table.set('b', new Uint8Array(16).fill(2))
  assert.deepEqual(held, new Uint8Array(16).fill(1))
  assert.deepEqual(table.get('b'), new Uint8Array(16).fill(2))
})
