/**
 * The test runner a conformance suite registers its tests with. The suites
 * use no runner of their own: pass the `describe` and `it` of node:test,
 * Vitest, Jest or Mocha. Failures are thrown `node:assert` errors, which
 * every runner reports.
 *
 * ```ts
 * import { describe, it } from 'node:test'        // or 'vitest', or Jest's globals
 * runStorageTests({ describe, it }, 'my storage', setup)
 * ```
 *
 * Each test of the storage and transport suites finishes within its own
 * timeout (`timeoutMs`, default 60 s) whatever the runner, so a storage or
 * transport that never answers fails instead of hanging. A runner whose
 * default per-test timeout is shorter (Vitest and Jest 5 s, Mocha 2 s) may
 * stop a slow test first: raise it there (for example
 * `it: (name, body) => it(name, body, 60_000)` with Vitest or Jest).
 */

/** The part of a test runner the suites use. */
export interface TestRunner {
  /** Groups tests (`describe` of node:test, Vitest, Jest, Mocha). */
  describe(name: string, body: () => void): unknown
  /** Registers one test; `body` returns a promise that rejects on failure. */
  it(name: string, body: () => Promise<void>): unknown
}

/** The default per-test timeout of the storage and transport suites. */
export const DEFAULT_TEST_TIMEOUT_MS = 60_000

/** Registers `body` as a test that fails with a clear message after `timeoutMs`. */
export function timedTest(runner: TestRunner, name: string, timeoutMs: number, body: () => Promise<void>): void {
  runner.it(
    name,
    () =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: did not finish within ${timeoutMs} ms`)), timeoutMs)
        body()
          .then(resolve, reject)
          .finally(() => clearTimeout(timer))
      }),
  )
}
