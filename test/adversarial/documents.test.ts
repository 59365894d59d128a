/**
 * Document work under attack: Yjs updates whose dependency never arrives
 * (600 x 50 KB, through a Concord session and through y-websocket), and a
 * valid 10-million-character Automerge delta followed by normal use of
 * another Automerge name.
 */
import { test } from 'node:test'
import { randomBytes } from 'node:crypto'
import * as Y from 'yjs'
import * as encoding from 'lib0/encoding'
import { encodeMessage } from '../../sync/messages.ts'
import { splitIntoChunks } from '../../sync/chunking.ts'
import { attackLoop, stopAll, openArmed, openYRaw, type ArmedSocket } from './attackers.ts'
import { textInsertChange } from './automerge-change.ts'
import { PROBE_NAMES } from './fixtures/probe-names.ts'
import { attacked, sleep, underAttack } from './harness.ts'
import { checkNothingOf } from './store-checks.ts'

/**
 * `count` Yjs updates of about `bytes` each, inserted into the text `probe`
 * by one client after an insert that is never sent: every one waits for it
 * (a client's structs integrate in clock order). Inserted at the front, which
 * Yjs does in constant time (appending to a 30 MB text takes it 9 s).
 */
function updatesMissingTheirDependency(count: number, bytes: number, mark: string): Uint8Array[] {
  const doc = new Y.Doc()
  doc.clientID = 0x5eed
  const text = doc.getText('probe')
  text.insert(0, 'the dependency nobody sends')
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const chunk = `${mark};`.repeat(Math.ceil(bytes / (mark.length + 1))).slice(0, bytes)
  for (let i = 0; i < count; i++) text.insert(0, chunk)
  doc.destroy()
  return updates
}

/** A y-websocket "update" message (sync, update, the bytes). */
function yUpdateMessage(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 0)
  encoding.writeVarUint(encoder, 2)
  encoding.writeVarUint8Array(encoder, update)
  return encoding.toUint8Array(encoder)
}

test('pending-update flood: 600 Yjs updates of 50 KB whose dependency is missing, by session and by y-websocket', async (t) => {
  const MARK = 'EVIL-PENDING'
  const updates = updatesMissingTheirDependency(600, 50_000, MARK)
  const name = PROBE_NAMES.yjs
  await underAttack(t, {
    attack: 'pending-update flood (600 x 50 KB Yjs)',
    probe: 'yjs',
    // The legitimate writes start once most of the flood is in, when a server that keeps it all works hardest.
    settleMs: 1500,
    async start({ url, yjsUrl }) {
      let sentBySession = 0
      let sentByYWebsocket = 0
      let reconnects = 0
      const armed: ArmedSocket[] = []
      // The first half through a Concord session (DELTA frames), the second through y-websocket.
      const bySession = attackLoop(async (live) => {
        if (sentBySession >= 300) {
          await sleep(50)
          return
        }
        const socket = await openArmed(url, 'eve')
        armed.push(socket)
        if (armed.length > 1) reconnects++
        for (let seq = 1; sentBySession < 300 && socket.open && live(); seq++, sentBySession++) {
          await socket.inject(encodeMessage({ type: 'delta', seq, entry: { name, replicaType: 'yjs', delta: updates[sentBySession] } }))
        }
      })
      const byYWebsocket = attackLoop(async (live) => {
        if (sentByYWebsocket >= 300) {
          await sleep(50)
          return
        }
        const socket = await openYRaw(yjsUrl, name, 'eve')
        if (sentByYWebsocket > 0) reconnects++
        for (; sentByYWebsocket < 300 && socket.open && live(); sentByYWebsocket++) {
          await socket.send(yUpdateMessage(updates[300 + sentByYWebsocket]))
          while (socket.open && socket.buffered > 4 << 20) await sleep(5)
        }
        socket.close()
      })
      return {
        async stop() {
          const loops_ = await stopAll([bySession, byYWebsocket])
          await Promise.all(armed.map((s) => s.close()))
          return { sentBySession, sentByYWebsocket, reconnects, loops: loops_ }
        },
      }
    },
    checkStore: (store, peers) => checkNothingOf(store, peers, MARK, [name], 'eve'),
    checkAttacker: (seen) => {
      attacked(seen, 'sentBySession')
      attacked(seen, 'sentByYWebsocket')
    },
  })
})

test('a valid 10-million-character Automerge delta (~9.5 MiB, chunked), then normal use of another Automerge name', async (t) => {
  const MARK = 'EVIL-AUTOMERGE-'
  const chars = MARK.repeat(Math.ceil(10_000_000 / MARK.length)).slice(0, 10_000_000)
  await underAttack(t, {
    attack: 'huge valid Automerge delta (10M characters)',
    probe: 'automerge',
    async start({ url }) {
      let deltas = 0
      let chunks = 0
      const armed: ArmedSocket[] = []
      const loop = attackLoop(async (live) => {
        const socket = await openArmed(url, 'eve')
        armed.push(socket)
        const delta = textInsertChange(chars, randomBytes(16).toString('hex'))
        const message = encodeMessage({ type: 'delta', seq: 1, entry: { name: 'evil/huge-automerge', replicaType: 'automerge', delta } })
        for (const frame of splitIntoChunks(message, 1 << 20, 1)) {
          if (!live()) break
          await socket.inject(frame)
          chunks++
        }
        deltas++
        for (let waited = 0; waited < 2000 && live(); waited += 50) await sleep(50)
        await socket.close()
      })
      return {
        async stop() {
          const loops_ = await stopAll([loop])
          return { deltas, chunks, deltaMiB: Math.round((chars.length / 2 ** 20) * 10) / 10, loops: loops_ }
        },
      }
    },
    checkStore: (store, peers) => checkNothingOf(store, peers, MARK, [PROBE_NAMES.automerge, 'evil/huge-automerge'], 'eve'),
    checkAttacker: (seen) => attacked(seen, 'deltas'),
  })
})
