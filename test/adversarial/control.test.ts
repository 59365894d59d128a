import { test } from 'node:test'
import assert from 'node:assert/strict'
import { underAttack } from './harness.ts'

test('control: no attack; the harness measures a server at rest and the legitimate pair converging', async (t) => {
  await underAttack(t, {
    attack: 'control (no attack)',
    seed: 50,
    start: async () => ({ stop: async () => {} }),
    checkStore: async (store) => {
      assert.equal(store.names.filter((info) => info.name.startsWith('seed/')).length, 50, 'the seeded names')
    },
  })
})
