/**
 * The change clock of an Automerge document: for every actor, the hashes of
 * its changes by sequence number. Every Automerge change has an actor and a
 * seq, and its deps imply all earlier changes of its actor, so the changes
 * a document holds are, per actor, exactly seqs `1..n`: `actor -> n` says
 * what a replica has, and `(actor, seq) -> hash` turns a remote clock into
 * heads Automerge knows (see `AutomergeReplica.deltaSince`).
 *
 * Kept incrementally: a local change appends one hash; a remote delta
 * appends the metadata of the changes it added (`getChangesMetaSince`, whose
 * cost follows the number of new changes). Hashes are stored packed (32
 * bytes per change), not as hex strings.
 */
import * as A from '@automerge/automerge/slim'

const HASH_BYTES = 32
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48
  if (code >= 97 && code <= 102) return code - 87
  if (code >= 65 && code <= 70) return code - 55
  return -1
}

/** Writes the 64-hex-digit `hash` into `out` at `offset`; false if it is not one. */
export function writeHashBytes(hash: string, out: Uint8Array, offset: number): boolean {
  if (hash.length !== HASH_BYTES * 2) return false
  for (let i = 0; i < HASH_BYTES; i++) {
    const hi = hexValue(hash.charCodeAt(i * 2))
    const lo = hexValue(hash.charCodeAt(i * 2 + 1))
    if (hi < 0 || lo < 0) return false
    out[offset + i] = (hi << 4) | lo
  }
  return true
}

/** Lower-case hex of `bytes[start, end)`. */
export function hexOf(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let hex = ''
  for (let i = start; i < end; i++) hex += HEX[bytes[i]]
  return hex
}

/** The hashes of one actor's changes, seq 1 first. */
class ActorChain {
  private hashes = new Uint8Array(HASH_BYTES * 4)
  /** Highest seq held (= number of changes). */
  count = 0

  append(hash: string): void {
    if ((this.count + 1) * HASH_BYTES > this.hashes.length) {
      const grown = new Uint8Array(this.hashes.length * 2)
      grown.set(this.hashes)
      this.hashes = grown
    }
    if (!writeHashBytes(hash, this.hashes, this.count * HASH_BYTES)) throw new Error(`automerge clock: ${hash} is not a change hash`)
    this.count++
  }

  /** The hash of change `seq` (1..count). */
  hashAt(seq: number): string {
    return hexOf(this.hashes, (seq - 1) * HASH_BYTES, seq * HASH_BYTES)
  }
}

/** Per actor, the changes a document holds (see the module comment). */
export class ChangeClock {
  private readonly chains = new Map<string, ActorChain>()

  /** The clock of every change `doc` holds (one pass over their metadata). */
  static of(doc: A.Doc<unknown>): ChangeClock {
    const clock = new ChangeClock()
    clock.addChanges(A.getChangesMetaSince(doc, []))
    return clock
  }

  /** Highest seq of `actor` held (0 if none). */
  seq(actor: string): number {
    return this.chains.get(actor)?.count ?? 0
  }

  /** The hash of `actor`'s change `seq` (1..seq(actor)). */
  hashAt(actor: string, seq: number): string {
    return this.chains.get(actor)!.hashAt(seq)
  }

  /** Actors with their highest seq, in no particular order. */
  *entries(): IterableIterator<[string, number]> {
    for (const [actor, chain] of this.chains) yield [actor, chain.count]
  }

  /**
   * Records one new change of `actor` with the next seq. Returns false
   * (and records nothing) when `seq` is not the next one.
   */
  add(actor: string, seq: number, hash: string): boolean {
    let chain = this.chains.get(actor)
    if (chain === undefined) this.chains.set(actor, (chain = new ActorChain()))
    if (seq !== chain.count + 1) return false
    chain.append(hash)
    return true
  }

  /**
   * Records changes new to this clock, in any order. Returns false when they
   * leave a gap in some actor's seqs (then the clock must be rebuilt).
   */
  addChanges(changes: readonly A.ChangeMetadata[]): boolean {
    const sorted = [...changes].sort((a, b) => (a.actor < b.actor ? -1 : a.actor > b.actor ? 1 : a.seq - b.seq))
    for (const change of sorted) {
      if (change.seq <= this.seq(change.actor)) continue
      if (!this.add(change.actor, change.seq, change.hash)) return false
    }
    return true
  }
}
