/**
 * `concord-crdt/testing`: the conformance suites, for a third-party storage,
 * transport or replicated type to run with its own test runner (node:test,
 * Vitest, Jest, Mocha: pass its `describe` and `it`). Needs `fast-check`
 * (a peer dependency: `npm i -D fast-check`). And `createTestPeer`: a peer
 * with the test hooks `createPeer` refuses (its replica creator, clock and
 * session ticks), for tests and simulations.
 *
 * ```ts
 * import { describe, it } from 'node:test'
 * import { runStorageTests } from 'concord-crdt/testing'
 * runStorageTests({ describe, it }, 'my storage', async () => {
 *   const storage = await openMyStorage()
 *   return { storage, teardown: () => storage.close() }
 * })
 * ```
 */
export { DEFAULT_TEST_TIMEOUT_MS, type TestRunner } from './runner.ts'
export { runStorageTests, type StorageSetup, type StorageTestOptions } from './storage-suite.ts'
export { runTransportTests, type TransportSetup, type TransportTestOptions } from './transport-suite.ts'
export { runCrdtLaws, LAW_SEED, defaultEqual, pull, recordLocal, type LawSpec, type RandomOp } from './crdt-laws.ts'
export { FaultStorage, type FaultRule } from '../persistence/storage/fault-storage.ts'
export { createTestPeer, type TestPeerOptions } from '../peer/test-peer.ts'
export type { PeerTestHooks } from '../peer/options.ts'
