/**
 * `node:assert/strict` for the test pages, as far as the conformance
 * suites use it (equal, notEqual, ok, deepEqual, rejects): the bundle of a
 * test page maps `node:assert/strict` here (a page has no Node built-in).
 */
class AssertionError extends Error {
  override name = 'AssertionError'
}

function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  if (ArrayBuffer.isView(a) || Array.isArray(a)) {
    const x = a as unknown as ArrayLike<unknown>
    const y = b as unknown as ArrayLike<unknown>
    if (x.length !== y.length) return false
    for (let i = 0; i < x.length; i++) if (!same(x[i], y[i])) return false
    return true
  }
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  return keys.every((key) => Object.hasOwn(b, key) && same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
}

const show = (value: unknown): string => {
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}

function fail(message: string | undefined, fallback: string): never {
  throw new AssertionError(message ?? fallback)
}

const assert = {
  ok(value: unknown, message?: string): void {
    if (!value) fail(message, `expected a truthy value, got ${show(value)}`)
  },
  equal(actual: unknown, expected: unknown, message?: string): void {
    if (!Object.is(actual, expected)) fail(message, `expected ${show(expected)}, got ${show(actual)}`)
  },
  notEqual(actual: unknown, expected: unknown, message?: string): void {
    if (Object.is(actual, expected)) fail(message, `expected anything but ${show(expected)}`)
  },
  deepEqual(actual: unknown, expected: unknown, message?: string): void {
    if (!same(actual, expected)) fail(message, `expected ${show(expected)}, got ${show(actual)}`)
  },
  async rejects(promise: Promise<unknown> | (() => Promise<unknown>), check?: (error: unknown) => boolean, message?: string): Promise<void> {
    try {
      await (typeof promise === 'function' ? promise() : promise)
    } catch (error) {
      if (check && !check(error)) fail(message, `the rejection did not pass the check: ${String((error as Error)?.message ?? error)}`)
      return
    }
    fail(message, 'expected a rejection')
  },
}

export default assert
