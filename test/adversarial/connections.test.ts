/**
 * Connection exhaustion: a thousand idle WebSockets, and slowloris (an HTTP
 * upgrade, then a WebSocket frame, each written one byte at a time). The
 * attackers come from other loopback addresses (127.0.0.2 and up) than the
 * legitimate peers (127.0.0.1), as other hosts would: a listener limits
 * connections per address as well as in total, so one host cannot lock the
 * others out.
 */
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { attackLoop, stopAll, openRaw, type RawSocket } from './attackers.ts'
import { helloFrame } from './frames.ts'
import { attacked, legitimateNewcomer, sleep, underAttack } from './harness.ts'
import { onlyLegitimateData } from './store-checks.ts'
import { clientFrame, trickle, upgradeRequest, type Trickle } from './tcp.ts'

/** A slowloris connection must be dropped by the server within this (its timeouts), long before its last byte. */
const SLOWLORIS_DEADLINE_MS = 20_000
/** One byte every this many ms: a full upgrade request takes over a minute, longer than the deadline. */
const TRICKLE_EVERY_MS = 400

/** Starts `count` trickles over 3 addresses; `stop` waits until the server dropped them all (or the deadline) and reports. */
async function slowloris(count: number, host: string, port: number, make: () => { bytes: Uint8Array; prefix?: Uint8Array }) {
  const started = performance.now()
  const trickles: Trickle[] = []
  let failedToStart = 0
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      try {
        const { bytes, prefix } = make()
        trickles.push(await trickle(host, port, bytes, { everyMs: TRICKLE_EVERY_MS, localAddress: `127.0.0.${2 + (i % 3)}`, prefix }))
      } catch {
        failedToStart++
      }
    }),
  )
  return {
    async stop() {
      while (trickles.some((c) => c.heldMs === undefined) && performance.now() - started < SLOWLORIS_DEADLINE_MS) await sleep(100)
      const held = trickles
        .map((c) => c.heldMs)
        .filter((ms): ms is number => ms !== undefined)
        .sort((a, b) => a - b)
      const stillOpen = trickles.length - held.length
      const finished = trickles.filter((c) => c.finished).length
      for (const c of trickles) c.stop()
      return {
        connections: trickles.length,
        failedToStart,
        droppedByServer: held.length,
        stillOpenAtDeadline: stillOpen,
        finishedTheirBytes: finished,
        longestHeldMs: Math.round(held.at(-1) ?? 0),
        medianHeldMs: Math.round(held[Math.floor(held.length / 2)] ?? 0),
      }
    },
  }
}

function droppedThemAll(seen: Record<string, unknown>): void {
  attacked(seen, 'connections')
  assert.equal(seen.stillOpenAtDeadline, 0, `the server drops every slowloris connection within ${SLOWLORIS_DEADLINE_MS} ms (${JSON.stringify(seen)})`)
  assert.equal(seen.finishedTheirBytes, 0, 'before it could finish sending')
}

// The three run at once (each against its own server): the slowloris ones wait out the server's timeouts.
describe('connection exhaustion', { concurrency: 3 }, () => {
  test('1,000 idle connections from two addresses: WebSockets that upgrade and never send a frame', async (t) => {
    await underAttack(t, {
      attack: '1,000 idle connections (2 addresses)',
      async start({ url }) {
        const sockets = new Set<RawSocket>()
        let accepted = 0
        const refusals = new Map<string, number>()
        let peak = 0
        const openOne = async (i: number) => {
          try {
            const socket = await openRaw(url, { localAddress: `127.0.0.${2 + (i % 2)}` })
            accepted++
            sockets.add(socket)
            peak = Math.max(peak, sockets.size)
            void socket.closed.then(() => sockets.delete(socket))
          } catch (error) {
            const why = /Unexpected server response: (\d+)/.exec((error as Error).message)?.[1] ?? (error as { code?: string }).code ?? 'error'
            refusals.set(why, (refusals.get(why) ?? 0) + 1)
          }
        }
        // Open 1,000 (100 at a time), then keep topping up the ones the server closes.
        for (let batch = 0; batch < 10; batch++) await Promise.all(Array.from({ length: 100 }, (_, i) => openOne(batch * 100 + i)))
        let next = 1000
        const topUp = attackLoop(async () => {
          const missing = 1000 - sockets.size
          await Promise.all(Array.from({ length: Math.min(missing, 100) }, () => openOne(next++)))
          await sleep(200)
        })
        return {
          async stop() {
            const loops_ = await stopAll([topUp])
            // While the attacker still holds what it got, a legitimate newcomer from another address gets in.
            const started = performance.now()
            const newcomer = await legitimateNewcomer(url, 5000)
            const newcomerMs = newcomer ? Math.round(performance.now() - started) : null
            await newcomer?.close()
            const open = sockets.size
            for (const socket of sockets) socket.close()
            return {
              attempts: next,
              accepted,
              refused: Object.fromEntries(refusals),
              peakOpen: peak,
              openAtEnd: open,
              newcomerDuringAttackMs: newcomerMs,
              loops: loops_,
            }
          },
        }
      },
      checkStore: (store) => onlyLegitimateData(store),
      checkAttacker(seen) {
        attacked(seen, 'accepted')
        assert.notEqual(seen.newcomerDuringAttackMs, null, 'a legitimate newcomer connects while the attacker holds its connections')
        const refused = seen.refused as Record<string, number>
        const byStatus = Object.entries(refused)
          .filter(([why]) => /^[45]\d\d$/.test(why))
          .reduce((n, [, count]) => n + count, 0)
        assert.ok(byStatus > 0, `two addresses do not get 1,000 connections: the listener refuses some with an HTTP status (${JSON.stringify(seen)})`)
      },
    })
  })

  test('slowloris: 300 HTTP upgrade requests to /concord written one byte at a time', async (t) => {
    await underAttack(t, {
      attack: 'slowloris: HTTP upgrade trickled',
      start: ({ host, port }) => slowloris(300, host, port, () => ({ bytes: upgradeRequest(host, port, '/concord') })),
      checkStore: (store) => onlyLegitimateData(store),
      checkAttacker: droppedThemAll,
    })
  })

  test('slowloris: 300 upgraded WebSockets each writing one frame (a HELLO) one byte at a time', async (t) => {
    await underAttack(t, {
      attack: 'slowloris: WebSocket frame trickled',
      start: ({ host, port }) =>
        slowloris(300, host, port, () => ({
          prefix: upgradeRequest(host, port, '/concord'),
          bytes: clientFrame(helloFrame('intruder', 'not-a-token'.repeat(8))),
        })),
      checkStore: (store) => onlyLegitimateData(store),
      checkAttacker: droppedThemAll,
    })
  })
})
