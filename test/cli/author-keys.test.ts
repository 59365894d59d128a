/**
 * `concord history` and `concord verify` check signatures against author
 * keys (issue 16): the folder's owner is bound to `<dir>/libp2p-key`, and
 * `--author-key ID=PEERID` binds any author. Real `concord` child processes
 * on a real LevelDB folder written by two signing peers over WebSocket.
 */
import assert from 'node:assert/strict'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createPeer } from '../../peer/index.ts'
import { encodeKeyFile, KEY_FILE_NAME } from '../../transports/libp2p/key-file.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { spawnConcord } from './helpers.ts'

/** Runs the real `concord` with `args`; its exit code and output. */
async function concord(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawnConcord(args)
  const out: Buffer[] = []
  const err: Buffer[] = []
  child.stdout!.on('data', (chunk: Buffer) => out.push(chunk))
  child.stderr!.on('data', (chunk: Buffer) => err.push(chunk))
  const code = await new Promise<number>((resolve) => child.once('close', (status) => resolve(status ?? -1)))
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }
}

async function keyPair() {
  const key = await generateKeyPair('Ed25519')
  return { key, peerId: peerIdFromPrivateKey(key).toString() }
}

test('concord history and verify bind the owner to <dir>/libp2p-key and other authors with --author-key (real processes)', { timeout: 120_000 }, async () => {
  const root = await tempDir('concord-cli-author-keys-')
  try {
    const alice = await keyPair()
    const bob = await keyPair()
    const dir = join(root.path, 'alice')
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, KEY_FILE_NAME), encodeKeyFile(alice.key), { mode: 0o600 })
    const a = await createPeer({ agentId: 'alice', dir, signingKey: alice.key })
    const b = await createPeer({ agentId: 'bob', signingKey: bob.key })
    try {
      const { url } = await a.listen()
      await b.connect(url)
      await until(() => b.status().sessions.some((s) => s.synced), 'bob synced')
      const plan = await a.set('plan')
      await a.transact(() => plan.add('draft'), { message: 'alice drafts' })
      const atBob = await b.set('plan')
      await until(() => (atBob.value() as string[]).includes('draft'), 'bob has the plan')
      await b.transact(() => atBob.add('review'), { message: 'bob reviews' })
      await until(async () => (await a.history('plan')).length === 2, 'alice logged bob’s change')
    } finally {
      await b.close()
      await a.close()
    }
    const statuses = async (...extra: string[]) => {
      const run = await concord(['history', 'plan', '--dir', dir, '--json', ...extra])
      assert.equal(run.code, 0, run.stderr)
      return (JSON.parse(run.stdout) as Array<{ agent: string; signature: { status: string; signer: string } | null }>).map((r) => [
        r.agent,
        r.signature?.status ?? null,
        r.signature?.signer ?? null,
      ])
    }
    // The owner's key is the folder's libp2p key: its own records verify; bob's key is bound to nothing here.
    assert.deepEqual(await statuses(), [
      ['alice', 'verified', alice.peerId],
      ['bob', 'unbound', bob.peerId],
    ])
    assert.deepEqual(await statuses('--author-key', `bob=${bob.peerId}`), [
      ['alice', 'verified', alice.peerId],
      ['bob', 'verified', bob.peerId],
    ])
    // A binding that names another key: bob's record does not verify as his.
    assert.deepEqual(await statuses('--author-key', `bob=${alice.peerId}`), [
      ['alice', 'verified', alice.peerId],
      ['bob', 'invalid', bob.peerId],
    ])
    const table = await concord(['history', 'plan', '--dir', dir, '--author-key', `bob=${bob.peerId}`])
    assert.equal(table.code, 0, table.stderr)
    assert.doesNotMatch(table.stdout, /unbound/)

    const verified = await concord(['verify', 'plan', '--dir', dir, '--json', '--author-key', `bob=${bob.peerId}`])
    assert.equal(verified.code, 0, verified.stderr)
    const [report] = JSON.parse(verified.stdout).reports ?? JSON.parse(verified.stdout)
    assert.deepEqual(report.signatures, { verified: 2, unbound: 0, unsigned: 0 })
    const forged = await concord(['verify', 'plan', '--dir', dir, '--author-key', `bob=${alice.peerId}`])
    assert.notEqual(forged.code, 0, 'a record that does not verify as its author’s fails verify')

    for (const bad of ['bob', 'bob=not-a-peer-id']) {
      const run = await concord(['history', 'plan', '--dir', dir, '--author-key', bad])
      assert.equal(run.code, 2, `${bad}: a usage error`)
      assert.match(run.stderr, /--author-key must be ID=PEERID/)
    }
  } finally {
    await root.remove()
  }
})
