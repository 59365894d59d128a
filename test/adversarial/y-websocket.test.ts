/**
 * The y-websocket route under attack: stock `WebsocketProvider` clients
 * without credentials and with read-only credentials trying to edit (their
 * edits must neither persist nor reach anyone), and an awareness flood.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { WebSocket } from 'ws'
import * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'
import * as encoding from 'lib0/encoding'
import { attackLoop, stopAll, openYRaw, yCredentials, type RawSocket } from './attackers.ts'
import type { Role } from './fixtures/roles.ts'
import { PROBE_NAMES } from './fixtures/probe-names.ts'
import { attacked, sleep, underAttack } from './harness.ts'
import { checkNothingOf } from './store-checks.ts'

const ROOM = PROBE_NAMES.yjs

/** A stock y-websocket client of `room` that keeps inserting `mark` into the text the legitimate peers write. */
function editor(yjsUrl: string, room: string, mark: string, role?: Role) {
  const doc = new Y.Doc()
  const provider = new WebsocketProvider(yjsUrl, room, doc, {
    WebSocketPolyfill: WebSocket as never,
    disableBc: true,
    params: role ? yCredentials(role) : undefined,
  })
  let sawLegit = false
  let edits = 0
  const text = doc.getText('probe')
  const observe = () => {
    if (/w\d+-\d+;/.test(text.toString())) sawLegit = true
  }
  text.observe(observe)
  const timer = setInterval(() => {
    text.insert(text.length, `${mark}${edits++};`)
    observe()
  }, 100)
  return {
    stop() {
      clearInterval(timer)
      const seen = { room, synced: provider.synced, sawLegitContent: sawLegit, edits }
      provider.destroy()
      doc.destroy()
      return seen
    },
  }
}

test('y-websocket clients without credentials edit an existing room and create a new one', async (t) => {
  const MARK = 'EVIL-ANON'
  await underAttack(t, {
    attack: 'y-websocket without credentials',
    probe: 'yjs',
    settleMs: 1000,
    async start({ yjsUrl }) {
      const editors = [editor(yjsUrl, ROOM, MARK), editor(yjsUrl, ROOM, MARK), editor(yjsUrl, 'evil/anonymous-room', MARK)]
      return {
        async stop() {
          return { clients: editors.map((e) => e.stop()) }
        },
      }
    },
    checkStore: (store, peers) => checkNothingOf(store, peers, MARK, [ROOM]),
    checkAttacker(seen) {
      const clients = seen.clients as Array<{ sawLegitContent: boolean }>
      assert.ok(
        clients.every((c) => !c.sawLegitContent),
        'a client without credentials reads nothing',
      )
    },
  })
})

test('y-websocket clients with read-only credentials read the room, and their edits are dropped', async (t) => {
  const MARK = 'EVIL-READER'
  await underAttack(t, {
    attack: 'y-websocket with read-only credentials',
    probe: 'yjs',
    settleMs: 1000,
    async start({ yjsUrl }) {
      const editors = [editor(yjsUrl, ROOM, MARK, 'reader'), editor(yjsUrl, ROOM, MARK, 'reader'), editor(yjsUrl, 'evil/reader-room', MARK, 'reader')]
      return {
        async stop() {
          return { clients: editors.map((e) => e.stop()) }
        },
      }
    },
    checkStore: (store, peers) => checkNothingOf(store, peers, MARK, [ROOM], 'reader'),
    checkAttacker(seen) {
      const clients = seen.clients as Array<{ room: string; sawLegitContent: boolean }>
      assert.ok(
        clients.filter((c) => c.room === ROOM).every((c) => c.sawLegitContent),
        'a read-only client was admitted and reads the room (the test is not vacuous)',
      )
    },
  })
})

/** One y-websocket awareness message: `count` states of about `stateBytes` bytes for fresh client ids from `firstId`. */
function awarenessMessage(firstId: number, count: number, stateBytes: number, mark: string): Uint8Array {
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, count)
  const state = JSON.stringify({ user: { name: mark, color: '#ff0000' }, cursor: 'x'.repeat(stateBytes) })
  for (let i = 0; i < count; i++) {
    encoding.writeVarUint(update, firstId + i)
    encoding.writeVarUint(update, 1)
    encoding.writeVarString(update, state)
  }
  const message = encoding.createEncoder()
  encoding.writeVarUint(message, 1) // messageAwareness
  encoding.writeVarUint8Array(message, encoding.toUint8Array(update))
  return encoding.toUint8Array(message)
}

test('awareness flood: thousands of 4 KiB presence states per second, with write credentials and without', async (t) => {
  const MARK = 'EVIL-PRESENCE'
  await underAttack(t, {
    attack: 'awareness flood',
    probe: 'yjs',
    async start({ yjsUrl }) {
      // A legitimate y-websocket client of the room watches how many presence states it is made to hold.
      const doc = new Y.Doc()
      const observer = new WebsocketProvider(yjsUrl, ROOM, doc, { WebSocketPolyfill: WebSocket as never, disableBc: true, params: yCredentials('alice') })
      let observerMaxStates = 0
      observer.awareness.on('change', () => {
        observerMaxStates = Math.max(observerMaxStates, observer.awareness.getStates().size)
      })
      let nextId = 1_000_000
      const statesSent = { withCredentials: 0, anonymous: 0 }
      let bytes = 0
      const loops = (
        [
          ['eve', 4],
          [undefined, 2],
        ] as const
      ).flatMap(([role, n]) =>
        Array.from({ length: n }, () => {
          let socket: RawSocket | undefined
          return attackLoop(async () => {
            if (!socket?.open) socket = await openYRaw(yjsUrl, ROOM, role)
            for (let i = 0; i < 10; i++) {
              const message = awarenessMessage(nextId, 100, 4096, MARK)
              nextId += 100
              statesSent[role ? 'withCredentials' : 'anonymous'] += 100
              bytes += message.length
              void socket.send(message)
            }
            while (socket.open && socket.buffered > 8 << 20) await sleep(10)
            await sleep(100)
          })
        }),
      )
      return {
        async stop() {
          const loops_ = await stopAll(loops)
          const seen = {
            statesSentWithCredentials: statesSent.withCredentials,
            statesSentAnonymously: statesSent.anonymous,
            mibSent: Math.round(bytes / 2 ** 20),
            observerSynced: observer.synced,
            observerMaxStates,
            loops: loops_,
          }
          observer.destroy()
          doc.destroy()
          return seen
        },
      }
    },
    checkStore: (store, peers) => checkNothingOf(store, peers, MARK, [ROOM]),
    checkAttacker(seen) {
      attacked(seen, 'statesSentWithCredentials')
      assert.ok(seen.observerSynced, 'the legitimate y-websocket client was admitted')
      assert.ok((seen.observerMaxStates as number) <= 1000, `a room's presence is bounded (the observer held ${seen.observerMaxStates} states)`)
    },
  })
})
