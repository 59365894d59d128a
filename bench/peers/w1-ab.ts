import { runW1, type W1Contender } from './w1.ts'
const [clients, count, interval, rounds, ...contenders] = process.argv.slice(2)
for (let r = 0; r < Number(rounds); r++)
  for (const c of contenders as W1Contender[]) {
    const res = await runW1(c, { clients: Number(clients), count: Number(count), intervalMs: Number(interval), warmup: 10 })
    console.log(c, JSON.stringify({ p50: res.p50.toFixed(1), p99: res.p99.toFixed(1), toHub: res.toHubP50.toFixed(1), conv: res.convergeMs.toFixed(0), hubCpu: res.hubCpuMs.toFixed(0), cli: res.clientCpuMs.toFixed(0), delay: res.clientLoopDelayP99Ms.toFixed(1), rs: res.hubResyncs }))
  }
