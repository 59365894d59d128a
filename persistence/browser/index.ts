/** persistence/browser/: the storage of a browser peer (IndexedDB through browser-level, a tab lock) and the browser's stand-ins for Node-only modules. */
export { openIndexedDbStorage, IndexedDbStorage, INDEXEDDB_PREFIX, DEFAULT_LOCK_WAIT_MS, type IndexedDbStorageOptions } from './indexeddb-storage.ts'
export { openLevelStorage, type LevelStorageOptions } from './open-level-storage.ts'
