/**
 * `createPeer()` in a browser (`concord-crdt/browser`): the platform-neutral
 * {@link PeerCore} (replicas, `transact`, `flush`, history, events, stats:
 * the same API as in Node) on IndexedDB storage, dialing over the
 * browser's WebSocket. A browser cannot listen: `connect(url)` only (and
 * `attach` for any other connection). Automerge's wasm is loaded on first
 * need from where the page says (`automerge.wasm`), not bundled.
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import { openStore, type Store } from '../persistence/store.ts'
import type { Storage } from '../persistence/storage/storage.ts'
import { DEFAULT_LOCK_WAIT_MS, openIndexedDbStorage } from '../persistence/browser/indexeddb-storage.ts'
import { openLevelStorage } from '../persistence/browser/open-level-storage.ts'
import { BrowserWebSocketTransport } from '../transports/browser-websocket/transport.ts'
import type { WebSocketLikeConstructor } from '../transports/browser-websocket/websocket-like.ts'
import { Dialer, type DialOptions } from './dialer.ts'
import { refuseTestHooks, validatePeerOptions, type PeerOptions, type ResolvedPeerSetup } from './options.ts'
import { PeerCore, peerStoreOptions } from './peer-core.ts'
import { AutomergeLoader, type AutomergeOptions } from './browser-automerge.ts'

export type { AutomergeOptions, AutomergeWasmSource } from './browser-automerge.ts'

/** Options of the browser's {@link createPeer}: Node's, less files and listening, plus where the data lives. */
export interface BrowserPeerOptions extends Omit<PeerOptions, 'dir' | 'storage' | 'libp2p' | 'archiveAfterMs'> {
  /**
   * The IndexedDB database holding this replica (default: its `agentId`; opened
   * as `concord:<database>`, one tab at a time); `false`: in memory, nothing
   * kept across a reload.
   */
  readonly database?: string | false | undefined
  /** A storage of your own instead (the peer does not close it). */
  readonly storage?: Storage | undefined
  /**
   * Automerge documents: where the page serves Automerge's wasm
   * (`@automerge/automerge/automerge.wasm`), loaded on first need. Without
   * it, this peer holds no Automerge document (see README, "Browser").
   */
  readonly automerge?: AutomergeOptions | false | undefined
  /** How long to wait for another tab's hold on the database before `CONCORD_LOCKED` (default 3 000 ms). */
  readonly lockWaitMs?: number | undefined
  /** The WebSocket class to dial with (default: the page's global `WebSocket`). */
  readonly WebSocket?: WebSocketLikeConstructor | undefined
}

/** Options of {@link BrowserPeer.connect}. */
export type BrowserConnectOptions = DialOptions

function validateBrowserOptions(options: BrowserPeerOptions): BrowserPeerOptions & { readonly agentId: string } {
  if (options === null || typeof options !== 'object') {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer needs an options object with at least an agentId')
  }
  const node = options as PeerOptions
  for (const key of ['dir', 'libp2p', 'archiveAfterMs'] as const) {
    if (node[key] !== undefined) {
      const why =
        key === 'dir'
          ? 'a browser keeps its data in IndexedDB: give database (a name) instead'
          : key === 'libp2p'
            ? 'libp2p is not part of concord-crdt/browser: connect over WebSocket'
            : 'archival writes files beside the database, and a browser has none'
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `createPeer: ${key} is not available in a browser (${why})`)
    }
  }
  const { database } = options
  if (database !== undefined && database !== false && (typeof database !== 'string' || database.length === 0 || database.length > 256)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: database must be a non-empty name of at most 256 characters, or false (in memory)')
  }
  if (database !== undefined && options.storage !== undefined) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: give either database or storage, not both')
  }
  const lockWaitMs = options.lockWaitMs
  if (lockWaitMs !== undefined && !(typeof lockWaitMs === 'number' && Number.isFinite(lockWaitMs) && lockWaitMs >= 0)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'createPeer: lockWaitMs must be a number of ms >= 0')
  }
  refuseTestHooks(options as PeerOptions, 'createPeer')
  const { agentId } = validatePeerOptions({ ...options, dir: undefined, libp2p: undefined } as PeerOptions)
  return { ...options, agentId }
}

/**
 * Creates a browser peer: takes its database (IndexedDB, one tab at a
 * time), opens its store and gets it ready to sync.
 * @throws ConcordError `CONCORD_LOCKED` (another tab holds the database),
 * `CONCORD_STORAGE_ERROR` (no IndexedDB), `CONCORD_INVALID_ARGUMENT`.
 */
export async function createPeer(given: BrowserPeerOptions): Promise<BrowserPeer> {
  const options = validateBrowserOptions(given)
  const automerge = new AutomergeLoader(options.automerge)
  const ownStorage = options.storage === undefined
  const storage =
    options.storage ??
    (options.database === false
      ? await openLevelStorage({ signal: options.signal })
      : await openIndexedDbStorage({
          database: options.database ?? options.agentId,
          lockWaitMs: options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS,
          signal: options.signal,
        }))
  let store: Store | undefined
  try {
    store = await openStore(peerStoreOptions({ ...options, dir: undefined, libp2p: undefined, storage } as ResolvedPeerSetup))
    // Stored Automerge documents are hydrated for sync: load Automerge now, or say why the data cannot be opened here.
    const documents = (await store.names({ signal: options.signal })).filter((info) => info.type === 'automerge').map((info) => info.name)
    if (documents.length > 0) {
      const unsupported = await automerge.prepare()
      if (unsupported !== undefined) {
        throw new ConcordError(
          ErrorCodes.INVALID_ARGUMENT,
          `createPeer: this database holds Automerge documents (${documents.slice(0, 3).join(', ')}${documents.length > 3 ? ', ...' : ''}) and ${unsupported}`,
        )
      }
    }
    return new BrowserPeer(options, store, automerge, ownStorage ? storage : undefined)
  } catch (error) {
    await store?.close().catch(() => undefined)
    if (ownStorage) await storage.close().catch(() => undefined)
    throw error
  }
}

/** A Concord peer in a browser: typed replicas, kept in IndexedDB and synced over WebSocket. See {@link createPeer}. */
export class BrowserPeer extends PeerCore {
  private readonly dialer: Dialer
  private transport: BrowserWebSocketTransport | undefined

  /** @internal use {@link createPeer}. */
  constructor(
    options: BrowserPeerOptions & { readonly agentId: string },
    store: Store,
    private readonly automergeLoader: AutomergeLoader,
    private readonly ownStorage: Storage | undefined,
  ) {
    super({ ...options, dir: undefined, libp2p: undefined } as ResolvedPeerSetup, store)
    this.dialer = new Dialer({
      attach: (connection, attachOptions) => this.attach(connection, attachOptions),
      onReconnecting: (event) => this.events.emit('reconnecting', event),
    })
  }

  /**
   * Connects to a peer's WebSocket URL (`ws://host:port/concord`, or
   * `wss://` from a page served over https) and resolves when the first
   * handshake completes, as in Node: that first attempt is the answer
   * (`CONCORD_INVALID_ARGUMENT` for an address that is not a WebSocket URL;
   * `CONCORD_UNREACHABLE` when the dial fails: a browser does not say why;
   * `CONCORD_AUTH_FAILED` for refused credentials; `CONCORD_TIMEOUT` after
   * `timeoutMs`, default 15 s), then the link is kept up with backoff
   * (`reconnecting` events) until `disconnect(url)`. Credentials travel in
   * the handshake, never in the URL.
   */
  async connect(url: string, options: BrowserConnectOptions = {}): Promise<void> {
    this.checkOpen()
    // As Peer.connect: the index of names loads meanwhile, not when the remote first lists them.
    this.store.preloadNames()
    return this.dialer.connect(url, options, () => {
      const maxFrame = this.options.maxFrameBytes ?? 1 << 20
      this.transport ??= new BrowserWebSocketTransport({
        WebSocket: (this.options as BrowserPeerOptions).WebSocket,
        maxPayload: Math.max(maxFrame, 1 << 20) + 1024,
      })
      return this.transport
    })
  }

  /**
   * Stops keeping up the connection(s) dialed to `url` and closes them;
   * returns how many (0 if none). `connect(url)` again restores it.
   */
  disconnect(url: string): number {
    this.checkOpen()
    return this.dialer.disconnect(url)
  }

  protected override async stopDialing(): Promise<void> {
    this.dialer.stop()
  }

  protected override async stopTransports(): Promise<void> {
    await this.transport?.stop()
  }

  protected override async afterStoreClosed(): Promise<void> {
    await this.ownStorage?.close()
  }

  protected override prepareType(type: ReplicaType): string | undefined | Promise<string | undefined> {
    return type === 'automerge' ? this.automergeLoader.prepare() : undefined
  }
}
