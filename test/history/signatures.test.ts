/**
 * Signed provenance in the store (issue 16, "Trust"): a store with a key
 * signs its own records (record format 3), `history` says which records are
 * signed and whether they verify, `verify` checks signatures with the hash
 * chain, and a remote change is checked against its claimed author's key
 * before anything is applied (`CONCORD_BAD_SIGNATURE`). The Node and
 * browser Ed25519 modules agree.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { isConcordError } from '../../crdt/errors.ts'
import { peerIdOfPublicKey, signedBytes } from '../../crdt/signature.ts'
import type { GCounterReplica } from '../../crdt/types/index.ts'
import * as browser from '../../persistence/browser/ed25519.ts'
import { sha256 } from '../../persistence/format/checksum.ts'
import * as node from '../../persistence/format/ed25519.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { decodeRecord, encodeRecord } from '../../persistence/format/record.ts'
import { openStore } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import { cli, cliJson } from '../cli/helpers.ts'
import { tempDir, typeText } from '../persistence/helpers.ts'

const hasCode = (code: string) => (error: unknown) => isConcordError(error) && error.code === code

describe('signatures in the store', () => {
  it('the Node and browser Ed25519 modules give the same keys and signatures, and each verifies the other', () => {
    for (let i = 0; i < 8; i++) {
      const seed = new Uint8Array(randomBytes(32))
      const message = new Uint8Array(randomBytes(1 + i * 37))
      assert.deepEqual(node.ed25519PublicKey(seed), browser.ed25519PublicKey(seed))
      const signature = node.ed25519Sign(seed, message)
      assert.deepEqual(signature, browser.ed25519Sign(seed, message))
      const publicKey = node.ed25519PublicKey(seed)
      assert.ok(browser.ed25519Verify(publicKey, message, signature))
      assert.ok(node.ed25519Verify(publicKey, message, signature))
      const flipped = signature.slice()
      flipped[i] ^= 1
      assert.equal(node.ed25519Verify(publicKey, message, flipped), false)
      assert.equal(browser.ed25519Verify(publicKey, message, flipped), false)
    }
  })

  it('signs its own records, keeps them signed through a restart, and verify detects a tampered signature in a LevelDB folder', async () => {
    const { dir, remove } = await tempDir()
    const key = new Uint8Array(randomBytes(32))
    const signer = peerIdOfPublicKey(node.ed25519PublicKey(key))
    try {
      let store = await openStore({ dir, agentId: 'alice', sweepMs: 0, signatures: { key } })
      const doc = await store.open('doc', 'yjs')
      const hits = (await store.open('hits', 'gcounter')) as GCounterReplica
      await store.atomic(
        () => {
          typeText(doc, 'plan')
          hits.increment(2)
        },
        { message: 'first draft', meta: { tool: 'editor' } },
      )
      await store.atomic(() => typeText(doc, '!'), { agent: 'mcp-client' })
      typeText(doc, '?')
      await store.flush()
      await store.close()
      store = await openStore({ dir, agentId: 'alice', sweepMs: 0, signatures: { key } })
      const history = await store.history('doc')
      assert.deepEqual(
        history.map((h) => [h.seq, h.agent, h.message, h.signature]),
        [
          [1, 'alice', 'first draft', { status: 'verified', signer }],
          // Made for another agent: this peer does not hold its key.
          [2, 'mcp-client', undefined, undefined],
          [3, 'alice', undefined, { status: 'verified', signer }],
        ],
      )
      // Both records of the block carry its provenance, its first change's time as `authored`.
      const [hit] = await store.history('hits')
      assert.equal(hit.message, 'first draft')
      assert.deepEqual(hit.signature, { status: 'verified', signer })
      assert.deepEqual(hit.authored ?? hit.hlc, history[0].authored ?? history[0].hlc)
      const report = await store.verify('doc')
      assert.deepEqual(report.problems, [])
      assert.deepEqual(report.signatures, { verified: 2, unbound: 0, unsigned: 1 })
      await store.close()
      // Opened without the key: the signatures verify with the key they carry, which nothing binds to "alice".
      store = await openStore({ dir, agentId: 'alice', sweepMs: 0 })
      assert.deepEqual((await store.history('doc'))[0].signature, { status: 'unbound', signer })
      assert.deepEqual((await store.verify('doc')).signatures, { verified: 0, unbound: 2, unsigned: 1 })
      await store.close()

      // Tamper: flip one byte of the last record's signature, with a valid checksum.
      const storage = await openLevelStorage({ dir })
      try {
        const bytes = (await storage.get(logKey('doc', 3)))!
        assert.equal(bytes[0], 4, 'records are format 4 (the signature is flagged)')
        const record = decodeRecord(bytes, { name: 'doc', seq: 3 })
        const signature = record.signature!.signature.slice()
        signature[7] ^= 0x40
        await storage.batch([{ type: 'put', key: logKey('doc', 3), value: encodeRecord({ ...record, signature: { ...record.signature!, signature } }) }])
      } finally {
        await storage.close()
      }
      store = await openStore({ dir, agentId: 'alice', sweepMs: 0, signatures: { key } })
      const tampered = await store.verify('doc')
      assert.equal(tampered.ok, false)
      assert.ok(tampered.problems.includes(`record 3: its signature does not verify as author "alice"'s`), tampered.problems.join('; '))
      assert.equal((await store.history('doc'))[2].signature?.status, 'invalid')
      await store.close()
      // The CLI: a SIG column and `signature` in --json (it knows no key: alice's own are unbound there); verify fails.
      const listed = await cliJson<Array<{ signature: { status: string } | null }>>(['history', 'doc', '--dir', dir])
      assert.deepEqual(
        listed.json.map((r) => r.signature?.status ?? null),
        ['unbound', null, 'invalid'],
      )
      const table = await cli(['history', 'doc', '--dir', dir])
      assert.match(table.stdout, /SIG/)
      assert.match(table.stdout, /unsigned/)
      assert.match(table.stdout, /INVALID/)
      const verified = await cli(['verify', 'doc', '--dir', dir])
      assert.notEqual(verified.code, 0, verified.stdout + verified.stderr)
      assert.match(verified.stdout + verified.stderr, /signature does not verify/)
    } finally {
      await remove()
    }
  })

  it('an unsigned store writes no format 3 record', async () => {
    const store = await openStore({ agentId: 'host', sweepMs: 0 })
    try {
      const doc = await store.open('doc', 'yjs')
      await store.atomic(() => typeText(doc, 'x'), { message: 'why' })
      const [entry] = await store.history('doc')
      assert.equal(entry.signature, undefined)
      assert.deepEqual((await store.verify('doc')).signatures, { verified: 0, unbound: 0, unsigned: 1 })
    } finally {
      await store.close()
    }
  })

  it('checks a remote change against its claimed author before applying it', async () => {
    const aliceKey = new Uint8Array(randomBytes(32))
    const alicePublic = node.ed25519PublicKey(aliceKey)
    const malloryKey = new Uint8Array(randomBytes(32))
    const author = await openStore({ agentId: 'alice', sweepMs: 0, signatures: { key: aliceKey } })
    const receiver = await openStore({
      agentId: 'bob',
      sweepMs: 0,
      signatures: { authorKey: (agent) => (agent === 'alice' ? alicePublic : undefined) },
    })
    try {
      const doc = await author.open('doc', 'yjs')
      await author.atomic(() => typeText(doc, 'hello'), { message: 'greeting' })
      const [record] = await author.history('doc')
      const stored = decodeRecord((await author.storage.get(logKey('doc', 1)))!, { name: 'doc', seq: 1 })
      const signature = stored.signature!
      const claim = { agent: 'alice', message: 'greeting', authored: record.hlc, claimed: true }
      const delta = record.delta

      // Another message, another author, other bytes: refused, nothing applied.
      for (const [what, deltas, options] of [
        ['message', [{ name: 'doc', delta, type: 'yjs', signature }], { ...claim, message: 'rewritten' }],
        ['author', [{ name: 'doc', delta, type: 'yjs', signature }], { ...claim, agent: 'carol' }],
        ['time', [{ name: 'doc', delta, type: 'yjs', signature }], { ...claim, authored: { wall: record.hlc.wall + 1, logical: 0 } }],
        ['bytes', [{ name: 'doc', delta: otherUpdate(), type: 'yjs', signature }], claim],
        ['unsigned', [{ name: 'doc', delta, type: 'yjs' }], claim],
        [
          'signed by another key',
          [
            {
              name: 'doc',
              delta,
              type: 'yjs',
              signature: { signature: node.ed25519Sign(malloryKey, new Uint8Array(8)), publicKey: node.ed25519PublicKey(malloryKey) },
            },
          ],
          claim,
        ],
      ] as const) {
        await assert.rejects(receiver.commit(deltas as never, options as never), hasCode('CONCORD_BAD_SIGNATURE'), what)
      }
      assert.deepEqual(await receiver.listNames(), [], 'nothing was applied, no name created')

      // Signed by mallory's own key as "alice": the key is not alice's.
      const forged = node.ed25519Sign(
        malloryKey,
        signedBytes({ name: 'doc', type: 'yjs', agent: 'alice', authored: record.hlc, message: 'greeting', deltaHash: sha256(delta) }),
      )
      await assert.rejects(
        receiver.commit([{ name: 'doc', delta, type: 'yjs', signature: { signature: forged, publicKey: node.ed25519PublicKey(malloryKey) } }], claim),
        hasCode('CONCORD_BAD_SIGNATURE'),
      )

      // The real one is taken, and kept signed.
      await receiver.commit([{ name: 'doc', delta, type: 'yjs', signature }], claim)
      const [got] = await receiver.history('doc')
      assert.deepEqual([got.agent, got.message, got.signature?.status], ['alice', 'greeting', 'verified'])
      assert.deepEqual((await receiver.verify('doc')).problems, [])
    } finally {
      await author.close()
      await receiver.close()
    }
  })
})

function otherUpdate(): Uint8Array {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, 'evil')
  return Y.encodeStateAsUpdate(doc)
}
