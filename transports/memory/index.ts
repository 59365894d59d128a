/** transports/memory/: the seeded simulated network and its transport. */
export { Network, MemoryTransport, MemoryConnection, settle } from './network.ts'
export type { NetworkOptions, FaultOptions, NetworkStats, VirtualTimers } from './network.ts'
export { Prng } from './prng.ts'
export { Scheduler } from './scheduler.ts'
export type { ScheduledEvent } from './scheduler.ts'
