/**
 * A minimal grow-only replica for sync tests, used for the native type tags
 * until crdt/registry.ts registers the real types: a set of (dot, value)
 * pairs, version = the set of dots. Test-only.
 */
import { Decoder, Encoder, decodeGuarded } from '../../../crdt/codec.ts'
import { Emitter } from '../../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../../crdt/errors.ts'
import type { Replica, ReplicaEvents, ReplicaId, ReplicaType } from '../../../crdt/replica.ts'

export class TestReplica implements Replica {
  readonly events = new Emitter<ReplicaEvents>()
  private readonly entries = new Map<string, string>()
  private counter = 0

  constructor(readonly type: ReplicaType, readonly replicaId: ReplicaId, snapshot?: Uint8Array) {
    if (snapshot) for (const [k, v] of decodeEntries(snapshot)) this.entries.set(k, v)
  }

  /** A local change: adds `value` under a new dot. */
  add(value: string): Uint8Array {
    const key = `${this.replicaId}:${++this.counter}`
    const delta = encodeEntries([[key, value]])
    this.entries.set(key, value)
    this.events.emit('change', { delta, local: true })
    return delta
  }

  version(): Uint8Array {
    const e = new Encoder().writeUint8(1)
    const keys = [...this.entries.keys()].sort()
    e.writeVarUint(keys.length)
    for (const k of keys) e.writeString(k)
    return e.finish()
  }

  deltaSince(version: Uint8Array): Uint8Array | null {
    const seen = decodeGuarded('test version', version, (d) => {
      d.readVersion(1, 'test version')
      const n = d.readCount(1)
      const keys = new Set<string>()
      for (let i = 0; i < n; i++) keys.add(d.readString())
      return keys
    })
    const missing = [...this.entries].filter(([k]) => !seen.has(k))
    return missing.length === 0 ? null : encodeEntries(missing)
  }

  applyDelta(delta: Uint8Array, origin?: unknown): boolean {
    const incoming = decodeEntries(delta)
    const fresh = incoming.filter(([k]) => !this.entries.has(k))
    if (fresh.length === 0) return false
    for (const [k, v] of fresh) this.entries.set(k, v)
    this.events.emit('change', { delta: encodeEntries(fresh), local: false, origin })
    return true
  }

  snapshot(): Uint8Array {
    return encodeEntries([...this.entries])
  }

  value(): string[] {
    return [...this.entries.values()].sort()
  }

  restore(): Uint8Array | null {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'test replica cannot go back')
  }
}

function encodeEntries(entries: Array<[string, string]>): Uint8Array {
  const e = new Encoder().writeUint8(1).writeVarUint(entries.length)
  for (const [k, v] of entries) e.writeString(k).writeString(v)
  return e.finish()
}

function decodeEntries(bytes: Uint8Array): Array<[string, string]> {
  return decodeGuarded('test delta', bytes, (d: Decoder) => {
    d.readVersion(1, 'test delta')
    const n = d.readCount(2)
    const out: Array<[string, string]> = []
    for (let i = 0; i < n; i++) out.push([d.readString(), d.readString()])
    return out
  })
}
