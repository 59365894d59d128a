/**
 * The state digests of stored names that are not in memory, kept with the
 * owner's index (persistence/names/name-index.ts): 16 bytes each in one pool,
 * found by name. A `Map` of one `Uint8Array` per name cost ~234 bytes a
 * name (234 MiB at a million names, measured); this costs the map's entry
 * and 16 bytes (~45 MiB).
 */
import { DIGEST_BYTES } from '../format/name-meta.ts'

/** Slots the pool starts with (it doubles as it fills). */
const INITIAL_SLOTS = 1024

/** @internal the owner's digests of names not in memory. */
export class DigestTable {
  /** Slot of each name's digest in {@link pool}. */
  private readonly slots = new Map<string, number>()
  private pool = new Uint8Array(INITIAL_SLOTS * DIGEST_BYTES)
  /** Slots freed by {@link delete}, taken again first. */
  private free: number[] = []
  /** Slots ever handed out (those at or past it are unused). */
  private next = 0

  /** A copy of the digest of `name` (the pool's bytes are reused), or undefined when unknown. */
  get(name: string): Uint8Array | undefined {
    const slot = this.slots.get(name)
    if (slot === undefined) return undefined
    return this.pool.slice(slot * DIGEST_BYTES, (slot + 1) * DIGEST_BYTES)
  }

  /** Notes the digest of `name`; one of another length than a state digest's leaves it unknown. */
  set(name: string, digest: Uint8Array): void {
    if (digest.length !== DIGEST_BYTES) {
      this.delete(name)
      return
    }
    let slot = this.slots.get(name)
    if (slot === undefined) {
      slot = this.free.pop() ?? this.next++
      if ((slot + 1) * DIGEST_BYTES > this.pool.length) {
        const grown = new Uint8Array(this.pool.length * 2)
        grown.set(this.pool)
        this.pool = grown
      }
      this.slots.set(name, slot)
    }
    this.pool.set(digest, slot * DIGEST_BYTES)
  }

  /** Forgets the digest of `name` (unknown from now on). */
  delete(name: string): void {
    const slot = this.slots.get(name)
    if (slot === undefined) return
    this.slots.delete(name)
    this.free.push(slot)
  }

  /** Forgets every digest (the pool shrinks back). */
  clear(): void {
    this.slots.clear()
    this.free = []
    this.next = 0
    this.pool = new Uint8Array(INITIAL_SLOTS * DIGEST_BYTES)
  }

  /** Names with a known digest. */
  get size(): number {
    return this.slots.size
  }
}
