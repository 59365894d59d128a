/** The abstract-level storage adapter (classic-level on disk, memory-level in memory). */
export { LevelStorage, type BytesLevel } from './level-storage.ts'
export { openLevelStorage, type LevelStorageOptions } from './open-level-storage.ts'
export { encodeKey, decodeKey } from './key-codec.ts'
