/**
 * Awareness (presence: cursors, user names) of one y-websocket room, within
 * bounds. Awareness is relayed between the room's clients and never
 * persisted. A client's awareness message is parsed with bounds-checked
 * reads before anything is applied, then only what fits is applied (through
 * y-protocols, so its clocks and timeouts hold):
 *
 * - a client controls the awareness ids (Yjs client ids) it introduced; a
 *   newer entry for an id another client controls is dropped (no one
 *   overwrites or removes someone else's presence). Stock clients echo
 *   every awareness change they receive back to the server: such echoes
 *   (not newer than what is held) are ignored, neither counted nor charged;
 * - at most `maxStatesPerClient` ids per client and `maxStatesPerRoom` per
 *   room; a state of more than `maxStateBytes` bytes (its JSON) is dropped;
 * - at most `messagesPerSecond` awareness messages that change something
 *   per client (token bucket, burst twice that); over the rate a message is
 *   dropped whole;
 * - the clocks of removed ids are kept (so a late echo cannot bring a
 *   removed presence back), at most `4 x maxStatesPerRoom` of them.
 *
 * Everything dropped is counted; nothing throws but `DecodeError`.
 */
import * as Y from 'yjs'
import * as awarenessProtocol from 'y-protocols/awareness'
import { type Decoder, Encoder, decodeGuarded } from '../crdt/codec.ts'
import { DecodeError } from '../crdt/errors.ts'
import { TokenBucket } from '../sync/token-bucket.ts'

/** Bounds of a room's awareness. */
export interface AwarenessLimits {
  /** Awareness states held per room (default 256). */
  readonly maxStatesPerRoom?: number
  /** Awareness ids one client may control (default 4: a page with a few documents bound to the room). */
  readonly maxStatesPerClient?: number
  /** Bytes of one state's JSON (default 8 KiB). */
  readonly maxStateBytes?: number
  /** Awareness messages one client may send per second (default 30, bursts of twice that). */
  readonly messagesPerSecond?: number
}

/** The defaults of {@link AwarenessLimits}. */
export const DEFAULT_AWARENESS_LIMITS: Required<AwarenessLimits> = {
  maxStatesPerRoom: 256,
  maxStatesPerClient: 4,
  maxStateBytes: 8 * 1024,
  messagesPerSecond: 30,
}

/** One client of the room, as far as awareness goes. */
export interface AwarenessClient {
  /** The awareness ids this client controls. */
  readonly ids: Set<number>
  /** Its message budget. */
  readonly bucket: TokenBucket
}

/** One entry of an awareness update as sent: the state's JSON kept as bytes until it is accepted. */
interface Entry {
  readonly id: number
  readonly clock: number
  readonly json: Uint8Array
}

const NULL_JSON = new TextEncoder().encode('null')
const textDecoder = new TextDecoder('utf-8', { fatal: true })

/** Parses an awareness update (`count (id clock json:varString)*`) without decoding the states. */
function parseAwarenessUpdate(bytes: Uint8Array): Entry[] {
  return decodeGuarded('awareness update', bytes, (decoder: Decoder) => {
    const count = decoder.readCount(3)
    const entries: Entry[] = []
    for (let i = 0; i < count; i++) entries.push({ id: decoder.readVarUint(), clock: decoder.readVarUint(), json: decoder.readBytes() })
    return entries
  })
}

function isRemoval(json: Uint8Array): boolean {
  return json.length === NULL_JSON.length && json.every((byte, i) => byte === NULL_JSON[i])
}

/** See the module comment. */
export class RoomAwareness {
  /** The room's awareness (y-protocols); the server has no presence of its own. */
  readonly awareness: awarenessProtocol.Awareness
  private readonly limits: Required<AwarenessLimits>
  /** Awareness id -> the client that controls it. */
  private readonly owners = new Map<number, AwarenessClient>()
  /** Removed ids whose clocks are still kept, oldest first. */
  private readonly removed = new Set<number>()
  private readonly doc = new Y.Doc()

  constructor(
    limits: AwarenessLimits,
    /** Called with every change to send to the room's clients (an encoded awareness update). */
    broadcast: (update: Uint8Array) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_AWARENESS_LIMITS, ...limits }
    this.awareness = new awarenessProtocol.Awareness(this.doc)
    this.awareness.setLocalState(null)
    this.awareness.on('update', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }) => {
      broadcast(awarenessProtocol.encodeAwarenessUpdate(this.awareness, [...added, ...updated, ...removed]))
      for (const id of [...added, ...updated]) this.removed.delete(id)
      for (const id of removed) {
        if (this.awareness.states.has(id)) continue
        const owner = this.owners.get(id)
        owner?.ids.delete(id)
        this.owners.delete(id)
        this.forget(id)
      }
    })
  }

  /** A new client's awareness budget. */
  join(): AwarenessClient {
    const rate = this.limits.messagesPerSecond
    return { ids: new Set(), bucket: new TokenBucket(rate, 2 * rate, this.now()) }
  }

  /** Every state held, encoded (for a client that joins or asks). */
  encodeAll(): Uint8Array | undefined {
    const ids = [...this.awareness.getStates().keys()]
    return ids.length > 0 ? awarenessProtocol.encodeAwarenessUpdate(this.awareness, ids) : undefined
  }

  /**
   * Applies an awareness update from `client` within bounds; returns how many
   * of its states were dropped. Throws `DecodeError` if it does not parse.
   */
  apply(update: Uint8Array, client: AwarenessClient): number {
    const { maxStateBytes, maxStatesPerClient, maxStatesPerRoom } = this.limits
    const entries = parseAwarenessUpdate(update)
    // Every state within the size bound must be JSON, or nothing of the message is applied.
    for (const entry of entries) {
      if (entry.json.length > maxStateBytes) continue
      try {
        JSON.parse(textDecoder.decode(entry.json))
      } catch (cause) {
        throw new DecodeError('awareness update: a state is not JSON', { cause })
      }
    }
    let dropped = 0
    let held = this.awareness.getStates().size
    let claimed = client.ids.size
    const kept: Entry[] = []
    const claims: number[] = []
    for (const entry of entries) {
      const owner = this.owners.get(entry.id)
      const clock = this.awareness.meta.get(entry.id)?.clock
      const newer = clock === undefined || entry.clock > clock
      const removal = isRemoval(entry.json)
      if (owner !== undefined && owner !== client) {
        if (newer) dropped++ // someone else's presence; else an echo of it
      } else if (owner === undefined && (removal || !newer)) {
        // nothing of this client's to remove, or an echo of a presence already gone
      } else if (entry.json.length > maxStateBytes) {
        dropped++
      } else if (owner === undefined && (claimed >= maxStatesPerClient || held >= maxStatesPerRoom)) {
        dropped++
      } else {
        if (owner === undefined) {
          claims.push(entry.id)
          claimed++
          held++
        }
        kept.push(entry)
      }
    }
    if (kept.length === 0 && dropped === 0) return 0 // echoes only: free
    if (!client.bucket.tryTake(1, this.now())) return kept.length + dropped
    if (kept.length === 0) return dropped
    for (const id of claims) {
      this.owners.set(id, client)
      client.ids.add(id)
    }
    const accepted = new Encoder().writeVarUint(kept.length)
    for (const entry of kept) accepted.writeVarUint(entry.id).writeVarUint(entry.clock).writeBytes(entry.json)
    awarenessProtocol.applyAwarenessUpdate(this.awareness, accepted.finish(), client)
    // An id whose first state y-protocols did not take (clock 0 is not newer than nothing) stays nobody's.
    for (const id of claims) {
      if (!this.awareness.states.has(id)) {
        this.owners.delete(id)
        client.ids.delete(id)
      }
    }
    return dropped
  }

  /** Keeps the clock of a removed id, forgetting the oldest beyond the bound. */
  private forget(id: number): void {
    this.removed.delete(id)
    this.removed.add(id)
    const cap = 4 * this.limits.maxStatesPerRoom
    for (const oldest of this.removed) {
      if (this.removed.size <= cap) break
      this.removed.delete(oldest)
      if (!this.awareness.states.has(oldest)) this.awareness.meta.delete(oldest)
    }
  }

  /** A client left: its states are removed (and the removal broadcast). */
  leave(client: AwarenessClient): void {
    const ids = [...client.ids].filter((id) => this.awareness.states.has(id))
    if (ids.length > 0) awarenessProtocol.removeAwarenessStates(this.awareness, ids, null)
    for (const id of client.ids) this.owners.delete(id)
    client.ids.clear()
  }

  /** Stops the awareness timers. */
  destroy(): void {
    this.awareness.destroy()
    this.doc.destroy()
  }
}
