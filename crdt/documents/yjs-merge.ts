/**
 * A fast merge of consecutive Yjs v1 updates of one client, the shape of a
 * run of local transactions: each update's structs belong to one client and
 * start at the clock where the previous update's ended (or there are none,
 * for a transaction that only deletes). Their structs are then one run of
 * that client, copied byte for byte after one section header, and their
 * delete sets are joined (sorted, adjacent and overlapping ranges
 * coalesced). Applying the result gives what applying the updates in order
 * gives: structs integrate in clock order, then the deletions apply.
 *
 * Anything else (several clients, a gap, a format the guard does not
 * know) returns undefined and the caller falls back to `Y.mergeUpdates`,
 * which handles every case but costs several microseconds per update.
 *
 * The structs are walked with the guard's own reader (yjs-guard.ts,
 * `readStruct`, the v1 grammar of Yjs 13.6); anything it refuses makes the
 * merge give up the same way.
 */
import { Encoder } from '../codec.ts'
import { DecodeError } from '../errors.ts'
import { DEFAULT_DOCUMENT_LIMITS } from './options.ts'
import { readStruct, YjsUpdateReader } from './yjs-guard.ts'

/**
 * Merges a run of v1 updates of one client (see the module comment), or
 * returns undefined when they are not one.
 */
export function mergeYjsRun(updates: readonly Uint8Array[]): Uint8Array | undefined {
  try {
    let client = -1
    let startClock = -1
    let nextClock = -1
    let structCount = 0
    let structBytes = 0
    // Where each update's structs lie (-1: none).
    const starts = new Array<number>(updates.length).fill(-1)
    const ends = new Array<number>(updates.length).fill(-1)
    const deletions = new Map<number, number[]>()
    for (let u = 0; u < updates.length; u++) {
      const update = updates[u]
      const reader = new YjsUpdateReader(update)
      const clients = reader.varUint()
      if (clients > 1) return undefined
      if (clients === 1) {
        const count = reader.varUint()
        const owner = reader.varUint()
        const clock = reader.varUint()
        if (client === -1) {
          client = owner
          startClock = clock
        } else if (owner !== client || clock !== nextClock) {
          return undefined
        }
        const from = reader.pos
        let end = clock
        for (let s = 0; s < count; s++) end += readStruct(reader, owner, end, DEFAULT_DOCUMENT_LIMITS)
        nextClock = end
        structCount += count
        structBytes += reader.pos - from
        starts[u] = from
        ends[u] = reader.pos
      }
      const dsClients = reader.varUint()
      for (let c = 0; c < dsClients; c++) {
        const owner = reader.varUint()
        const ranges = reader.varUint()
        let list = deletions.get(owner)
        if (!list) deletions.set(owner, (list = []))
        for (let r = 0; r < ranges; r++) list.push(reader.varUint(), reader.varUint())
      }
      if (reader.pos !== update.length) return undefined
    }
    const out = new Encoder(structBytes + 32)
    if (client === -1) {
      out.writeVarUint(0)
    } else {
      out.writeVarUint(1)
      out.writeVarUint(structCount)
      out.writeVarUint(client)
      out.writeVarUint(startClock)
      for (let u = 0; u < updates.length; u++) if (starts[u] >= 0) out.writeRaw(updates[u].subarray(starts[u], ends[u]))
    }
    writeDeletions(out, deletions)
    return out.finish()
  } catch (error) {
    // Not a shape this merge knows (the caller falls back to Y.mergeUpdates).
    if (error instanceof DecodeError) return undefined
    throw error
  }
}

/** Writes a delete set: clients in descending order (as Yjs does), each one's ranges sorted and coalesced. */
function writeDeletions(out: Encoder, deletions: Map<number, number[]>): void {
  const clients = [...deletions.keys()].sort((a, b) => b - a)
  out.writeVarUint(clients.length)
  for (const client of clients) {
    const flat = deletions.get(client)!
    const ranges: Array<[number, number]> = []
    for (let i = 0; i < flat.length; i += 2) ranges.push([flat[i], flat[i] + flat[i + 1]])
    ranges.sort((a, b) => a[0] - b[0])
    const merged: Array<[number, number]> = []
    for (const range of ranges) {
      const last = merged[merged.length - 1]
      if (last !== undefined && range[0] <= last[1]) last[1] = Math.max(last[1], range[1])
      else merged.push([range[0], range[1]])
    }
    out.writeVarUint(client)
    out.writeVarUint(merged.length)
    for (const [from, to] of merged) {
      out.writeVarUint(from)
      out.writeVarUint(to - from)
    }
  }
}
