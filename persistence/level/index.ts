/** The abstract-level storage adapter (classic-level on disk, memory-level in memory). */
export { LevelStorage, openLevelStorage, type BytesLevel, type LevelStorageOptions } from './level-storage.ts'
export { encodeKey, decodeKey } from './key-codec.ts'
