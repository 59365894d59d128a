/**
 * The libp2p door: the same floods over raw libp2p Concord streams (each
 * attacker its own node and PeerId) against a server that also listens on
 * libp2p, while the legitimate peers sync over WebSocket.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeMessage } from '../../sync/messages.ts'
import { attackLoop, stopAll, openArmed, openRawLibp2p, type ArmedSocket, type RawSocket } from './attackers.ts'
import { chunkFrame } from './frames.ts'
import { attacked, sleep, underAttack } from './harness.ts'
import { onlyLegitimateData } from './store-checks.ts'

test('libp2p: unauthenticated CHUNK flood, 4 streams announcing 32 MiB messages of 2^25 parts before any HELLO', async (t) => {
  await underAttack(t, {
    attack: 'libp2p: unauthenticated CHUNK flood',
    libp2p: true,
    async start({ multiaddr }) {
      let opened = 0
      let sent = 0
      let nextId = 0
      const streams: RawSocket[] = []
      const loops = Array.from({ length: 4 }, () => {
        let stream: RawSocket | undefined
        return attackLoop(async () => {
          if (!stream?.open) {
            stream = await openRawLibp2p(multiaddr!)
            streams.push(stream)
            opened++
          }
          for (let i = 0; i < 4 && stream.open; i++, sent++) await stream.send(chunkFrame(nextId++, 0, 2 ** 25, 2 ** 25))
          await sleep(20)
        })
      })
      return {
        async stop() {
          const loops_ = await stopAll(loops)
          for (const stream of streams) stream.close()
          return { streamsOpened: opened, chunkFramesSent: sent, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker: (seen) => attacked(seen, 'chunkFramesSent'),
  })
})

test('libp2p: REQUEST flood from a peer whose access is none, 500 names on the server', async (t) => {
  await underAttack(t, {
    attack: 'libp2p: REQUEST flood (access none, 500 names)',
    libp2p: true,
    seed: 500,
    async start({ multiaddr }) {
      const request = encodeMessage({ type: 'request' })
      let sent = 0
      const sockets: ArmedSocket[] = []
      const loop = attackLoop(async () => {
        const socket = sockets.at(-1)
        if (!socket?.open) {
          const fresh = await openArmed(multiaddr!, 'mallory', { watchFor: 'seed/' })
          sockets.push(fresh)
          for (let i = 0; i < 2000; i++, sent++) void fresh.inject(request)
          return
        }
        for (let i = 0; i < 100; i++, sent++) void socket.inject(request)
        await sleep(100)
      })
      return {
        async stop() {
          const loops_ = await stopAll([loop])
          const received = sockets.reduce((n, s) => n + s.received.bytes, 0)
          const framesNamingASeed = sockets.reduce((n, s) => n + s.received.framesWithWatched, 0)
          await Promise.all(sockets.map((s) => s.close()))
          return { requestsSent: sent, sessions: sockets.length, bytesTheAttackerReceived: received, framesNamingASeed, loops: loops_ }
        },
      }
    },
    checkStore: (store) => onlyLegitimateData(store),
    checkAttacker(seen) {
      attacked(seen, 'sessions')
      assert.equal(seen.framesNamingASeed, 0, 'a peer whose access is none learns no name')
    },
  })
})
