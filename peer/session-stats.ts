/** Sums of {@link SessionStats} over a peer's sessions. */
import type { SessionStats } from '../sync/index.ts'

/** Every session counter at zero. */
export function emptyStats(): SessionStats {
  return {
    framesIn: 0, framesOut: 0, bytesIn: 0, bytesOut: 0, malformed: 0, unknown: 0, unexpected: 0,
    commitsIn: 0, commitsOut: 0, duplicates: 0, gaps: 0, refusedWrites: 0, rejectedByRemote: 0,
    chunksIn: 0, chunksOut: 0, versionsSent: 0, overflows: 0, deferred: 0,
  }
}

/** Adds every counter of `from` to `into`. */
export function addStats(into: SessionStats, from: Readonly<SessionStats>): void {
  for (const key of Object.keys(into) as Array<keyof SessionStats>) into[key] += from[key]
}
