/** Test helpers for the MCP server: the SDK's own client, in process (a linked pair) or over a real transport. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Peer } from '../../peer/index.ts'
import { ConcordMcpServer, localPrincipal, type Principal } from '../../mcp/index.ts'

/** What a tool call answered. */
export interface Answer {
  readonly isError: boolean
  /** The structured content (`ok`, the result or `error: { code, message }`). */
  readonly body: Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly text: string
}

/** An SDK client with helpers, and the resource updates it was notified of. */
export interface TestClient {
  readonly client: Client
  readonly updates: string[]
  call(name: string, args?: Record<string, unknown>): Promise<Answer>
  /** Calls a tool that must succeed; returns its structured content. */
  ok(name: string, args?: Record<string, unknown>): Promise<Record<string, any>> // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>
}

/** Wraps a connected SDK client. */
export function wrap(client: Client, close: () => Promise<void>): TestClient {
  const updates: string[] = []
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri)
  })
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<Answer> => {
    const result = await client.callTool({ name, arguments: args })
    const text = (result.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('')
    return { isError: result.isError === true, body: (result.structuredContent ?? {}) as Record<string, unknown>, text }
  }
  return {
    client,
    updates,
    call,
    async ok(name, args) {
      const answer = await call(name, args)
      if (answer.isError) throw new Error(`${name} failed: ${answer.text}`)
      return answer.body
    },
    close,
  }
}

/** Connects an SDK client to `transport`. */
export async function connectClient(transport: Transport, name = 'test-agent'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' })
  await client.connect(transport)
  return client
}

/** The SDK client on an MCP server of `peer` in this process (as the peer's own agent, or `principal`). */
export async function inProcess(peer: Peer, principal: Principal = localPrincipal(peer)): Promise<TestClient> {
  const server = new ConcordMcpServer(peer, principal)
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = await connectClient(clientSide)
  return wrap(client, async () => {
    await client.close()
    await server.close()
  })
}
