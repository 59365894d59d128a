/**
 * MCP over stdio (`concord mcp`): one client, the process that started the
 * server, acting as the peer's own agent. JSON-RPC messages are lines on
 * stdin and stdout (so nothing else may be written to stdout); a line
 * longer than {@link STDIO_MAX_MESSAGE_BYTES} ends the connection.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { Readable, Writable } from 'node:stream'
import type { Peer } from '../peer/index.ts'
import { localPrincipal } from './principal.ts'
import { ConcordMcpServer, type McpServerOptions } from './server.ts'

/** Largest message read from stdin (a tool's arguments are bounded far below it). */
export const STDIO_MAX_MESSAGE_BYTES = 32 * 1024 * 1024

/** A running stdio server. */
export interface StdioMcp {
  readonly server: ConcordMcpServer
  /** Resolves when the client hung up (stdin ended) or {@link close} was called. */
  readonly closed: Promise<void>
  close(): Promise<void>
}

/** Serves MCP for `peer`'s own agent over `stdin`/`stdout` (default the process's). */
export async function serveMcpStdio(peer: Peer, options: McpServerOptions & { readonly stdin?: Readable; readonly stdout?: Writable } = {}): Promise<StdioMcp> {
  const stdin = options.stdin ?? process.stdin
  const stdout = options.stdout ?? process.stdout
  const server = new ConcordMcpServer(peer, localPrincipal(peer), options)
  const transport = new StdioServerTransport(stdin, stdout, { maxBufferSize: STDIO_MAX_MESSAGE_BYTES })
  let done!: () => void
  const closed = new Promise<void>((resolve) => {
    done = resolve
  })
  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    // Started in a later microtask: closing the server closes the transport, which calls back here.
    closing ??= Promise.resolve().then(async () => {
      stdin.off('end', onEnd)
      stdin.off('close', onEnd)
      await server.close()
      done()
    })
    return closing
  }
  const onEnd = (): void => void close()
  stdin.once('end', onEnd)
  stdin.once('close', onEnd)
  // Writing to a client that is gone must not take the process down.
  stdout.on('error', onEnd)
  transport.onclose = onEnd
  await server.connect(transport)
  return { server, closed, close }
}
