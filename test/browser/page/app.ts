/**
 * The test page's module: `concord-crdt/browser` (from the sources) and a
 * waiting helper, exposed as `window.Concord` by the page's HTML; the tests
 * drive it with `page.evaluate`.
 */
export * from '../../../browser.ts'

/** Resolves once `check()` holds, polling every 20 ms; rejects after `timeoutMs` with what it last saw. */
export async function waitFor(check: () => unknown, timeoutMs = 15_000, describe?: () => unknown): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waitFor: not within ${timeoutMs} ms${describe ? `: ${JSON.stringify(describe())}` : ''}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
