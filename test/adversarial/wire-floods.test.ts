/**
 * Wire floods against a server that requires credentials: CHUNK frames
 * announcing huge messages before any HELLO (and after one, from a peer
 * that may read nothing), REQUEST and VERSIONS floods from peers that may
 * read nothing (or everything), and frames whose counts and lengths lie, in
 * every message type. See harness.ts for what each test judges.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeMessage } from '../../sync/messages.ts'
import { attackLoop, stopAll, openArmed, openRaw, type ArmedSocket, type RawSocket } from './attackers.ts'
import { chunkFrame, oversizedFrames } from './frames.ts'
import { attacked, sleep, underAttack } from './harness.ts'
import { onlyLegitimateData } from './store-checks.ts'

/** Count and announced size of the CHUNK floods: the largest count V8 backs with a real array (2^25 x 8 bytes = 256 MiB each). */
const CHUNK_COUNT = 2 ** 25

test('unauthenticated CHUNK flood: 6 connections announce 32 MiB messages of 2^25 parts before any HELLO', async (t) => {
  await underAttack(t, {
    attack: 'unauthenticated CHUNK flood',
    async start({ url }) {
      let opened = 0
      let sent = 0
      let nextId = 0
      const sockets: RawSocket[] = []
      const loops = Array.from({ length: 6 }, () => {
        let socket: RawSocket | undefined
        return attackLoop(async () => {
          if (!socket?.open) {
            socket = await openRaw(url)
            sockets.push(socket)
            opened++
          }
          for (let i = 0; i < 4 && socket.open; i++, sent++) await socket.send(chunkFrame(nextId++, 0, CHUNK_COUNT, CHUNK_COUNT))
          await sleep(20)
        })
      })
      return {
        async stop() {
          const loops_ = await stopAll(loops)
          for (const socket of sockets) socket.close()
          return { connectionsOpened: opened, chunkFramesSent: sent, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker: (seen) => attacked(seen, 'chunkFramesSent'),
  })
})

test('authenticated CHUNK flood: 3 sessions of a peer whose access is none announce 32 MiB messages of 2^25 parts', async (t) => {
  await underAttack(t, {
    attack: 'authenticated CHUNK flood (access none)',
    async start({ url }) {
      let opened = 0
      let sent = 0
      let nextId = 0
      const sockets: ArmedSocket[] = []
      const loops = Array.from({ length: 3 }, () => {
        let socket: ArmedSocket | undefined
        return attackLoop(async () => {
          if (!socket?.open) {
            socket = await openArmed(url, 'mallory')
            sockets.push(socket)
            opened++
          }
          for (let i = 0; i < 4 && socket.open; i++, sent++) await socket.inject(chunkFrame(nextId++, 0, CHUNK_COUNT, CHUNK_COUNT))
          await sleep(20)
        })
      })
      return {
        async stop() {
          const loops_ = await stopAll(loops)
          await Promise.all(sockets.map((s) => s.close()))
          return { sessionsOpened: opened, chunkFramesSent: sent, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker: (seen) => attacked(seen, 'chunkFramesSent'),
  })
})

test('REQUEST flood: a peer whose access is none sends thousands of REQUEST frames to a server holding 500 names', async (t) => {
  await underAttack(t, {
    attack: 'REQUEST flood (access none, 500 names)',
    seed: 500,
    async start({ url }) {
      const request = encodeMessage({ type: 'request' })
      let sent = 0
      const sockets: ArmedSocket[] = []
      const loops = Array.from({ length: 2 }, () => {
        let socket: ArmedSocket | undefined
        return attackLoop(async () => {
          if (!socket?.open) {
            socket = await openArmed(url, 'mallory', { watchFor: 'seed/' })
            sockets.push(socket)
            // The opening burst: 2,000 REQUESTs at once.
            for (let i = 0; i < 2000; i++, sent++) void socket.inject(request)
          }
          for (let i = 0; i < 100; i++, sent++) void socket.inject(request)
          await sleep(100)
        })
      })
      return {
        async stop() {
          const loops_ = await stopAll(loops)
          const received = sockets.reduce((n, s) => n + s.received.bytes, 0)
          const framesNamingASeed = sockets.reduce((n, s) => n + s.received.framesWithWatched, 0)
          await Promise.all(sockets.map((s) => s.close()))
          return { requestsSent: sent, sessions: sockets.length, bytesTheAttackerReceived: received, framesNamingASeed, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker(seen) {
      attacked(seen, 'requestsSent')
      assert.equal(seen.framesNamingASeed, 0, 'a peer whose access is none learns no name')
    },
  })
})

test('VERSIONS flood: a reader, a peer with access none and unauthenticated sockets each send VERSIONS by the thousand (500 names)', async (t) => {
  await underAttack(t, {
    attack: 'VERSIONS flood (read, none, unauthenticated; 500 names)',
    seed: 500,
    async start({ url }) {
      // An empty VERSIONS asks for everything: the reader is owed all 500 names each time.
      const versions = encodeMessage({ type: 'versions', entries: [] })
      let sent = 0
      let armedSent = 0
      const armed: ArmedSocket[] = []
      const raw: RawSocket[] = []
      const loops = (['reader', 'mallory', 'anonymous', 'anonymous'] as const).map((who) => {
        let socket: { open: boolean; send(frame: Uint8Array): Promise<void> } | undefined
        return attackLoop(async () => {
          if (!socket?.open) {
            if (who === 'anonymous') {
              const fresh = await openRaw(url)
              raw.push(fresh)
              socket = fresh
            } else {
              const fresh = await openArmed(url, who, { wantsEverything: true, watchFor: who === 'mallory' ? 'seed/' : undefined })
              armed.push(fresh)
              socket = {
                get open() {
                  return fresh.open
                },
                send: (frame) => fresh.inject(frame),
              }
            }
            for (let i = 0; i < 1000; i++, sent++) void socket.send(versions)
            if (who !== 'anonymous') armedSent += 1000
          }
          for (let i = 0; i < 100; i++, sent++) void socket.send(versions)
          if (who !== 'anonymous') armedSent += 100
          await sleep(100)
        })
      })
      return {
        async stop() {
          const loops_ = await stopAll(loops)
          const received = armed.reduce((n, s) => n + s.received.bytes, 0)
          const framesNamingASeedToMallory = armed.reduce((n, s) => n + s.received.framesWithWatched, 0)
          await Promise.all(armed.map((s) => s.close()))
          for (const socket of raw) socket.close()
          return { versionsSent: sent, versionsSentInSessions: armedSent, bytesTheArmedAttackersReceived: received, framesNamingASeedToMallory, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker(seen) {
      attacked(seen, 'versionsSentInSessions')
      assert.equal(seen.framesNamingASeedToMallory, 0, 'a peer whose access is none learns no name')
    },
  })
})

test('oversized counts and lengths in every message type, before the handshake and after it (access none, and write)', async (t) => {
  const frames = oversizedFrames()
  await underAttack(t, {
    attack: 'oversized counts and lengths, every message type',
    async start({ url }) {
      let sent = 0
      let armedSent = 0
      const passes = { raw: 0, mallory: 0, eve: 0 }
      // One connection per kind of frame (each sent 3 times, under the malformed-frame limit), so that every
      // kind is read; every attacker goes through all kinds at least once, however short the run.
      const raw = attackLoop(async (live) => {
        for (const { frame } of frames) {
          if (!live() && passes.raw > 0) return
          const socket = await openRaw(url)
          for (let i = 0; i < 3 && socket.open; i++, sent++) await socket.send(frame)
          socket.close()
        }
        passes.raw++
      })
      const armed = (['mallory', 'eve'] as const).map((role) =>
        attackLoop(async (live) => {
          for (const { frame } of frames) {
            if (!live() && passes[role] > 0) return
            const socket = await openArmed(url, role)
            try {
              for (let i = 0; i < 3 && socket.open; i++, sent++, armedSent++) await socket.inject(frame)
              await sleep(20)
            } finally {
              await socket.close()
            }
          }
          passes[role]++
        }),
      )
      return {
        async stop() {
          const loops_ = await stopAll([raw, ...armed])
          return { kinds: frames.length, passes, framesSent: sent, framesSentInSessions: armedSent, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker: (seen) => attacked(seen, 'framesSentInSessions'),
  })
})
