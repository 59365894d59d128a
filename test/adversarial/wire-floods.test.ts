/**
 * Wire floods against a server that requires credentials: CHUNK frames
 * announcing huge messages before any HELLO, REQUEST and VERSIONS floods
 * from peers that may read nothing (or everything), and frames whose counts
 * and lengths lie, in every message type. See harness.ts for what each
 * test judges.
 */
import { test } from 'node:test'
import { encodeMessage } from '../../sync/messages.ts'
import { attackLoop, openArmed, openRaw, type ArmedSocket, type RawSocket } from './attackers.ts'
import { chunkFrame, oversizedFrames } from './frames.ts'
import { sleep, underAttack } from './harness.ts'
import { onlyLegitimateData } from './store-checks.ts'

test('unauthenticated CHUNK flood: 6 connections announce 32 MiB messages of 2^25 parts before any HELLO', async (t) => {
  await underAttack(t, {
    attack: 'unauthenticated CHUNK flood',
    async start({ url }) {
      let opened = 0
      let sent = 0
      let nextId = 0
      const loops = Array.from({ length: 6 }, () => {
        let socket: RawSocket | undefined
        return attackLoop(async () => {
          if (!socket?.open) {
            socket = await openRaw(url)
            opened++
          }
          for (let i = 0; i < 4; i++, sent++) await socket.send(chunkFrame(nextId++, 0, 2 ** 25, 2 ** 25))
          await sleep(20)
        })
      })
      return { async stop() { await Promise.all(loops.map((loop) => loop.stop())); return { connectionsOpened: opened, chunkFramesSent: sent } } }
    },
    checkStore: (store) => onlyLegitimateData(store),
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
          for (let i = 0; i < 4; i++, sent++) await socket.inject(chunkFrame(nextId++, 0, 2 ** 25, 2 ** 25))
          await sleep(20)
        })
      })
      return {
        async stop() {
          await Promise.all(loops.map((loop) => loop.stop()))
          await Promise.all(sockets.map((s) => s.close()))
          return { sessionsOpened: opened, chunkFramesSent: sent }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
  })
})

test('REQUEST flood: a peer whose access is none sends thousands of REQUEST frames to a server holding 500 names', async (t) => {
  await underAttack(t, {
    attack: 'REQUEST flood (access none, 500 names)',
    seed: 500,
    async start({ url }) {
      const request = encodeMessage({ type: 'request' })
      let sent = 0
      let reconnects = 0
      const sockets: ArmedSocket[] = []
      const loops = Array.from({ length: 2 }, () => {
        let socket: ArmedSocket | undefined
        return attackLoop(async () => {
          if (!socket?.open) {
            if (socket) reconnects++
            socket = await openArmed(url, 'mallory')
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
          await Promise.all(loops.map((loop) => loop.stop()))
          const received = sockets.reduce((n, s) => n + s.received.bytes, 0)
          await Promise.all(sockets.map((s) => s.close()))
          return { requestsSent: sent, reconnects, bytesTheAttackerReceived: received }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
  })
})

test('VERSIONS flood: a reader, a peer with access none and unauthenticated sockets each send VERSIONS by the thousand (500 names)', async (t) => {
  await underAttack(t, {
    attack: 'VERSIONS flood (read, none, unauthenticated; 500 names)',
    seed: 500,
    async start({ url }) {
      const versions = encodeMessage({ type: 'versions', entries: [] })
      let sent = 0
      const armed: ArmedSocket[] = []
      const loops = (['reader', 'mallory', 'anonymous', 'anonymous'] as const).map((who) => {
        let send: ((frame: Uint8Array) => Promise<void>) | undefined
        let open = () => false
        return attackLoop(async () => {
          if (!open()) {
            if (who === 'anonymous') {
              const socket = await openRaw(url)
              send = (frame) => socket.send(frame)
              open = () => socket.open
            } else {
              const socket = await openArmed(url, who, { wantsEverything: true })
              armed.push(socket)
              send = (frame) => socket.inject(frame)
              open = () => socket.open
            }
            for (let i = 0; i < 1000; i++, sent++) void send(versions)
          }
          for (let i = 0; i < 100; i++, sent++) void send!(versions)
          await sleep(100)
        })
      })
      return {
        async stop() {
          await Promise.all(loops.map((loop) => loop.stop()))
          const received = armed.reduce((n, s) => n + s.received.bytes, 0)
          await Promise.all(armed.map((s) => s.close()))
          return { versionsSent: sent, bytesTheArmedAttackersReceived: received }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
  })
})

test('oversized counts and lengths in every message type, before the handshake and after it (access none, and write)', async (t) => {
  const frames = oversizedFrames()
  await underAttack(t, {
    attack: 'oversized counts and lengths, every message type',
    async start({ url }) {
      let rounds = 0
      let sent = 0
      const raw = attackLoop(async () => {
        const socket = await openRaw(url)
        for (const { frame } of frames) { if (!socket.open) break; await socket.send(frame); sent++ }
        socket.close()
        rounds++
      })
      const armed = (['mallory', 'eve'] as const).map((role) => attackLoop(async () => {
        const socket = await openArmed(url, role)
        try {
          for (const { frame } of frames) { if (!socket.open) break; await socket.inject(frame); sent++ }
          await sleep(50)
        } finally {
          await socket.close()
        }
        rounds++
      }))
      return {
        async stop() {
          await Promise.all([raw, ...armed].map((loop) => loop.stop()))
          return { kinds: frames.length, rounds, framesSent: sent }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
  })
})
