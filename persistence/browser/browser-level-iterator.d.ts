// browser-level ships no declarations for its iterator module; the part persistence/browser/indexeddb-level.ts uses.
declare module 'browser-level/iterator.js' {
  export class Iterator<K = unknown, V = unknown> {
    constructor(db: unknown, location: string, options: unknown)
    readonly limit: number
    _nextv(size: number, options: unknown): Promise<Array<[K | undefined, V | undefined]>>
    _seek(target: K, options: unknown): void
  }
}
