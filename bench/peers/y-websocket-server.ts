/**
 * The y-websocket server of the peer benchmarks: `@y/websocket-server`
 * 0.1.1's `setupWSConnection` on an HTTP server (not listening yet),
 * persisting to y-leveldb 0.2.0 in `dir` the way its YPERSISTENCE option
 * does (bindState: load the stored doc, then `storeUpdate` every update,
 * not awaited; y-leveldb never fsyncs).
 */
import { createServer, type Server } from 'node:http'
import { WebSocketServer } from 'ws'
import type { LeveldbPersistence } from 'y-leveldb'
import * as Y from 'yjs'

export async function yWebsocketServer(
  dir: string,
): Promise<{ server: Server; wss: WebSocketServer; ldb: LeveldbPersistence; getYDoc: (name: string) => Y.Doc & { whenInitialized: Promise<void> } }> {
  const { setupWSConnection, setPersistence, getYDoc } = await import('@y/websocket-server/utils')
  const { LeveldbPersistence } = await import('y-leveldb')
  const ldb = new LeveldbPersistence(dir)
  setPersistence({
    provider: ldb,
    bindState: async (docName: string, ydoc: Y.Doc) => {
      const persisted = await ldb.getYDoc(docName)
      ldb.storeUpdate(docName, Y.encodeStateAsUpdate(ydoc))
      Y.applyUpdate(ydoc, Y.encodeStateAsUpdate(persisted))
      ydoc.on('update', (update: Uint8Array) => {
        ldb.storeUpdate(docName, update)
      })
    },
    writeState: async () => {},
  })
  const server = createServer((_request, response) => response.end('okay'))
  const wss = new WebSocketServer({ noServer: true })
  wss.on('connection', setupWSConnection)
  server.on('upgrade', (request, socket, head) => wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request)))
  return { server, wss, ldb, getYDoc: getYDoc as never }
}
