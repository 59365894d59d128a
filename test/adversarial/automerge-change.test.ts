import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as A from '@automerge/automerge'
import { textInsertChange } from './automerge-change.ts'

test('textInsertChange writes exactly the change Automerge writes for a text insert, and Automerge loads it', () => {
  const actor = '0123456789abcdef0123456789abcdef'
  for (const n of [4, 5, 127, 128, 1000, 8191, 8192, 100_000]) {
    const chars = 'EVIL'.repeat(Math.ceil(n / 4)).slice(0, n)
    let doc = A.init<{ text?: string }>({ actor })
    doc = A.change(doc, { time: 0 }, (d) => {
      d.text = chars
    })
    const expected = A.getLastLocalChange(doc)!
    assert.deepEqual(Buffer.from(textInsertChange(chars, actor)).toString('hex'), Buffer.from(expected).toString('hex'), `n = ${n}`)
  }
  const [loaded] = A.applyChanges(A.init<{ text?: string }>(), [textInsertChange('abcdefgh'.repeat(5000), actor)])
  assert.equal(loaded.text?.length, 40_000)
})
