/** Test helpers: polling waits with a deadline (never a timing assertion). */

/** Resolves once `predicate()` holds; rejects after `timeoutMs` naming `what`. */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await predicate()) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** What {@link untilSynced} reads of a peer (a `Peer`). */
interface WithSessions {
  readonly agentId: string
  status(): { readonly sessions: ReadonlyArray<{ readonly agentId: string | null; readonly synced: boolean }> }
}

/** Resolves once `peer` finished its first anti-entropy with each of `remotes` (with none named: with some remote). */
export function untilSynced(peer: WithSessions, ...remotes: string[]): Promise<void> {
  const synced = (id?: string) => peer.status().sessions.some((s) => s.synced && (id === undefined || s.agentId === id))
  const what = `${peer.agentId} synced with ${remotes.length > 0 ? remotes.join(', ') : 'a remote'}`
  return until(() => (remotes.length > 0 ? remotes.every((id) => synced(id)) : synced()), what)
}
