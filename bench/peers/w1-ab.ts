/**
 * `npx tsx bench/peers/w1-ab.ts <clients> <count> <intervalMs> <rounds> <contender...>`:
 * W1 (bench/peers/w1.ts) for each contender in turn, `rounds` times
 * interleaved, one JSON line per run (p50, p99, edit to hub p50,
 * convergence, hub and clients' CPU, clients' loop delay p99, the hub's
 * store batches and fsyncs per edit, its resyncs): to compare two contenders (`concord` and `concord-async`, say)
 * without the full `npm run bench -- --filter peers/w1`.
 */
import { runW1, type W1Contender } from './w1.ts'

const [clients, count, interval, rounds, ...contenders] = process.argv.slice(2)
for (let round = 0; round < Number(rounds ?? 1); round++) {
  for (const contender of contenders as W1Contender[]) {
    const result = await runW1(contender, { clients: Number(clients), count: Number(count), intervalMs: Number(interval), warmup: 10 })
    const fixed = (value: number, digits = 1) => value.toFixed(digits)
    console.log(
      contender,
      JSON.stringify({
        p50: fixed(result.p50),
        p99: fixed(result.p99),
        toHubP50: fixed(result.toHubP50),
        convergeMs: fixed(result.convergeMs, 0),
        hubCpuMs: fixed(result.hubCpuMs, 0),
        clientCpuMs: fixed(result.clientCpuMs, 0),
        clientLoopDelayP99Ms: fixed(result.clientLoopDelayP99Ms),
        hubStore: result.hubStore && { batchesPerEdit: fixed(result.hubStore.batchesPerEdit, 3), fsyncsPerEdit: fixed(result.hubStore.fsyncsPerEdit, 3) },
        hubResyncs: result.hubResyncs,
      }),
    )
  }
}
