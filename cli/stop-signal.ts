/**
 * Waits until a long-running command should stop: SIGINT, SIGTERM, the
 * context's abort signal, or a reason of the command's own (`also`).
 * Resolves with what stopped it; the signal listeners are removed then.
 */
export function untilStopped(signal: AbortSignal | undefined, also?: (stop: (why: string) => void) => void): Promise<string> {
  return new Promise<string>((resolve) => {
    const stop = (why: string) => {
      process.removeListener('SIGINT', onInt)
      process.removeListener('SIGTERM', onTerm)
      resolve(why)
    }
    const onInt = () => stop('SIGINT')
    const onTerm = () => stop('SIGTERM')
    process.on('SIGINT', onInt)
    process.on('SIGTERM', onTerm)
    also?.(stop)
    signal?.addEventListener('abort', () => stop('abort'), { once: true })
    if (signal?.aborted) stop('abort')
  })
}
