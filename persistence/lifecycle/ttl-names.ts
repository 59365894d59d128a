/**
 * Which names carry a TTL of their own, so that the periodic sweep of a
 * store without one (and without a store-wide TTL) reads no metadata.
 *
 * The set is learnt by one scan of the written metadata (the first sweep
 * that needs it) and then kept by every metadata the pipeline writes
 * ({@link TtlNames.noteWritten}); a write that bypasses that path (an
 * archived name brought back) makes it unknown again, and the next sweep
 * scans once more. A name in the set that no longer exists only costs the
 * sweep the expiry pass it would have run anyway.
 */
import type { NameMeta } from '../format/name-meta.ts'

/** @internal the names with a TTL of their own (see the module comment). */
export class TtlNames {
  /** The names whose written metadata has `ttlMs > 0`; undefined until scanned (or after {@link unknown}). */
  private known: Set<string> | undefined
  /** While a scan runs: what was written meanwhile (name: has a TTL), which overrides what the scan read. */
  private during: Map<string, boolean> | undefined
  /** The scan running, if any (one at a time). */
  private scanning: Promise<void> | undefined
  /** {@link unknown} was called while a scan ran: its result is not taken. */
  private invalidated = false

  /** A metadata the pipeline wrote. */
  noteWritten(meta: NameMeta): void {
    this.during?.set(meta.name, meta.ttlMs > 0)
    if (this.known === undefined) return
    if (meta.ttlMs > 0) this.known.add(meta.name)
    else this.known.delete(meta.name)
  }

  /** `name` was deleted, archived or expired. */
  forget(name: string): void {
    this.during?.set(name, false)
    this.known?.delete(name)
  }

  /** Metadata was written past the pipeline's path: the next question scans again. */
  unknown(): void {
    this.known = undefined
    this.invalidated = this.during !== undefined
  }

  /** How many names have a TTL of their own, when known without a scan. */
  get size(): number | undefined {
    return this.known?.size
  }

  /** Whether some name has a TTL of its own; `scan` lists the written metadata, run only when the set is not known. */
  async any(scan: () => AsyncIterable<NameMeta>): Promise<boolean> {
    while (this.known === undefined) {
      this.scanning ??= this.scan(scan).finally(() => {
        this.scanning = undefined
      })
      await this.scanning
    }
    return this.known.size > 0
  }

  private async scan(scan: () => AsyncIterable<NameMeta>): Promise<void> {
    const during = new Map<string, boolean>()
    this.during = during
    this.invalidated = false
    const found = new Set<string>()
    try {
      for await (const meta of scan()) if (meta.ttlMs > 0) found.add(meta.name)
    } finally {
      this.during = undefined
    }
    for (const [name, ttl] of during) {
      if (ttl) found.add(name)
      else found.delete(name)
    }
    if (!this.invalidated) this.known = found
  }
}
