/**
 * Types for y-leveldb (`concord import --from-y-leveldb`, and the benchmarks'
 * baseline): its package.json `exports` map does not expose the declarations
 * it ships, so the part we use is declared here.
 */
declare module 'y-leveldb' {
  import type * as Y from 'yjs'
  /** y-leveldb's persistence over a LevelDB folder. */
  export class LeveldbPersistence {
    constructor(location: string, options?: unknown)
    storeUpdate(docName: string, update: Uint8Array): Promise<number>
    getYDoc(docName: string): Promise<Y.Doc>
    destroy(): Promise<void>
  }
}
