/**
 * The key layout of a store (see FORMAT.md). Sequence numbers are written as
 * 14 hex digits so that key order is numeric order.
 */
/** A storage key: a path of strings (persistence/storage/storage.ts). */
type StorageKey = readonly string[]

/** Fixed-width hex of a sequence number (0 .. 2^53-1). */
export function seqKey(seq: number): string {
  return seq.toString(16).padStart(14, '0')
}

/** Parses {@link seqKey}; NaN if malformed. */
export function parseSeqKey(key: string): number {
  return /^[0-9a-f]{14}$/.test(key) ? parseInt(key, 16) : Number.NaN
}

/** Store-wide information. */
export const STORE_INFO_KEY: StorageKey = ['s', 'info']
/** The seal key (FORMAT.md, "Seal"). */
export const SEAL_KEY: StorageKey = ['s', 'seal']
/** Losses found on open and not yet accepted by `repair`. */
export const LOSSES_KEY: StorageKey = ['s', 'losses']
/** Prefix of every name's metadata. */
export const META_PREFIX: StorageKey = ['m']
/** Prefix of every archived-name marker. */
export const ARCHIVE_PREFIX: StorageKey = ['a']
/** Prefix of every tail marker. */
export const TAIL_PREFIX: StorageKey = ['t']

/** Metadata of a name. */
export const metaKey = (name: string): StorageKey => ['m', name]
/** Marker of an archived name. */
export const archiveKey = (name: string): StorageKey => ['a', name]
/**
 * Tail marker of a name: its log runs past the `lastSeq` of its stored
 * metadata (written with the first such record, deleted with the next
 * metadata write).
 */
export const tailKey = (name: string): StorageKey => ['t', name]
/** The value of a tail marker (format version 1, nothing else). */
export const TAIL_MARKER: Uint8Array = Uint8Array.of(1)
/** Prefix of the log records of a name. */
export const logPrefix = (name: string): StorageKey => ['l', name]
/** One log record. */
export const logKey = (name: string, seq: number): StorageKey => ['l', name, seqKey(seq)]
/** Prefix of the checkpoints of a name. */
export const checkpointPrefix = (name: string): StorageKey => ['c', name]
/** One checkpoint. */
export const checkpointKey = (name: string, seq: number): StorageKey => ['c', name, seqKey(seq)]
/**
 * Marker of a name that was in a unit of several names (a transaction, a
 * remote commit of several): an anti-entropy answer keeps such names in
 * one bundle (persistence/names/joint-names.ts). Value {@link JOINT_MARKER}.
 */
export const jointKey = (name: string): StorageKey => ['j', name]
/** Prefix of every joint-name marker. */
export const JOINT_PREFIX: StorageKey = ['j']
/** The value of a joint-name marker (format version 1, nothing else). */
export const JOINT_MARKER: Uint8Array = Uint8Array.of(1)
/**
 * Present in a store that has marked its joint names since it was created
 * (value {@link JOINT_MARKER}); a folder without it (made by an older
 * version, or restored) may hold joint names unmarked.
 */
export const JOINT_TRACKED_KEY: StorageKey = ['s', 'joint']

/** Orders two names as their storage keys do (by code point, as UTF-8 bytes order). */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    // A surrogate (a code point above U+FFFF) sorts after every BMP unit in code point order.
    const xs = x >= 0xd800 && x <= 0xdfff
    const ys = y >= 0xd800 && y <= 0xdfff
    if (xs !== ys) return xs ? 1 : -1
    return x - y
  }
  return a.length - b.length
}
