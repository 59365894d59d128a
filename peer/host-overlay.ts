/**
 * A {@link SyncHost} that is another host with some methods replaced: the
 * dialed-sessions host (another credential check), the gossip-aware host of
 * libp2p sessions, the identity-bound host. Every other method delegates.
 */
import type { SyncHost } from '../sync/index.ts'

/** `base`, with the methods in `overrides` instead of its own. */
export function overlayHost(base: SyncHost, overrides: Partial<SyncHost>): SyncHost {
  return {
    list: overrides.list ?? (() => base.list()),
    typeOf: overrides.typeOf ?? ((name) => base.typeOf(name)),
    version: overrides.version ?? ((name) => base.version(name)),
    deltaSince: overrides.deltaSince ?? ((name, version) => base.deltaSince(name, version)),
    applyRemote: overrides.applyRemote ?? ((entries, origin, applied, provenance, options) => base.applyRemote(entries, origin, applied, provenance, options)),
    // A group goes to the base only when applyRemote is the base's too (an override of one commit's path is never bypassed).
    ...((overrides.applyRemoteGroup ?? (overrides.applyRemote ? undefined : base.applyRemoteGroup))
      ? { applyRemoteGroup: overrides.applyRemoteGroup ?? ((commits, origin, applied) => base.applyRemoteGroup!(commits, origin, applied)) }
      : {}),
    subscribe: overrides.subscribe ?? ((listener) => base.subscribe(listener)),
    authenticate: overrides.authenticate ?? ((peer, presented) => base.authenticate(peer, presented)),
    access: overrides.access ?? ((peer, name) => base.access(peer, name)),
    ...((overrides.hold ?? base.hold) ? { hold: overrides.hold ?? ((names: readonly string[]) => base.hold!(names)) } : {}),
    ...((overrides.yieldTurn ?? base.yieldTurn) ? { yieldTurn: overrides.yieldTurn ?? (() => base.yieldTurn!()) } : {}),
    ...((overrides.digest ?? base.digest) ? { digest: overrides.digest ?? ((name: string) => base.digest!(name)) } : {}),
    ...((overrides.items ?? base.items) ? { items: overrides.items ?? (() => base.items!()) } : {}),
    ...((overrides.recordsSince ?? base.recordsSince)
      ? { recordsSince: overrides.recordsSince ?? ((name, since, lack, limits) => base.recordsSince!(name, since, lack, limits)) }
      : {}),
    ...((overrides.storedDeltas ?? base.storedDeltas) ? { storedDeltas: overrides.storedDeltas ?? ((wanted) => base.storedDeltas!(wanted)) } : {}),
    ...((overrides.logClock ?? base.logClock) ? { logClock: overrides.logClock ?? (() => base.logClock!()) } : {}),
    ...((overrides.joints ?? base.joints) ? { joints: overrides.joints ?? (() => base.joints!()) } : {}),
  }
}
