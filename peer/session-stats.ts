/** Sums of {@link SessionStats} over a peer's sessions. */
import { newSessionStats, type SessionStats } from '../sync/index.ts'

/** Every session counter at zero. */
export function emptyStats(): SessionStats {
  return newSessionStats()
}

/** Adds every counter of `from` to `into`. */
export function addStats(into: SessionStats, from: Readonly<SessionStats>): void {
  for (const key of Object.keys(into) as Array<keyof SessionStats>) into[key] += from[key]
}
