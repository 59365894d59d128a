/**
 * The MCP server of one client connection over a Concord peer: the SDK's
 * low-level `Server` (the tools' errors must carry Concord codes, and
 * resource subscriptions need handlers of their own, which the high-level
 * `McpServer` does not give) with the tools, resources and prompts of this
 * folder, acting for one {@link Principal}. Serve it over stdio
 * (mcp/stdio.ts) or streamable HTTP on the peer's listener (mcp/http.ts).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import type { Peer } from '../peer/index.ts'
import { getPrompt, PROMPTS } from './prompts.ts'
import type { Principal } from './principal.ts'
import { NAME_TEMPLATE, NameResources } from './resources.ts'
import { callTool, describeTool, TOOLS, TOOLS_BY_NAME } from './tools/index.ts'

/** The server's name and version as clients see them. */
export const MCP_SERVER_INFO = { name: 'concord', title: 'Concord shared memory', version: '0.1.0' } as const

/** What the server tells a model about itself (its `instructions`). */
export const MCP_INSTRUCTIONS = [
  'Concord is memory shared by several agents: named counters, sets, registers, maps and Yjs/Automerge documents that every peer holds a replica of.',
  'Concurrent writes merge and never conflict by themselves: a set add and a counter add from two agents both count; texts merge like Google Docs.',
  'list_names shows what exists; read gives a value and its version; pass that version as ifVersion on a write to write only if nothing changed since.',
  'Give every write a short "message" saying why. Coordinate with presence (who works on what) and by claiming tasks in a set before doing them',
  '(the prompt coordinate_task says how). history, diff, blame and at show who changed what and when; revert undoes as a new change.',
].join(' ')

/** Options of an MCP server. */
export interface McpServerOptions {
  /** Replaces the server's instructions to the model. */
  readonly instructions?: string | undefined
}

/** See the module comment. */
export class ConcordMcpServer {
  /** The SDK server (connect it to a transport). */
  readonly server: Server
  private readonly resources: NameResources

  constructor(
    peer: Peer,
    readonly principal: Principal,
    options: McpServerOptions = {},
  ) {
    this.server = new Server(MCP_SERVER_INFO, {
      capabilities: { tools: {}, resources: { subscribe: true, listChanged: true }, prompts: {} },
      instructions: options.instructions ?? MCP_INSTRUCTIONS,
    })
    this.resources = new NameResources(peer, principal, {
      updated: (uri) => this.server.sendResourceUpdated({ uri }),
      listChanged: () => this.server.sendResourceListChanged(),
    })
    const context = { peer, principal }
    const tools = TOOLS.map(describeTool)
    const server = this.server
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }))
    server.setRequestHandler(CallToolRequestSchema, (request) => callTool(TOOLS_BY_NAME, request.params.name, request.params.arguments, context))
    server.setRequestHandler(ListResourcesRequestSchema, (request) => this.resources.list(request.params?.cursor))
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [NAME_TEMPLATE] }))
    server.setRequestHandler(ReadResourceRequestSchema, (request) => this.resources.read(request.params.uri))
    server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      await this.resources.subscribe(request.params.uri)
      return {}
    })
    server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
      this.resources.unsubscribe(request.params.uri)
      return {}
    })
    server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: PROMPTS }))
    server.setRequestHandler(GetPromptRequestSchema, (request) => getPrompt(request.params.name, request.params.arguments, principal.agent))
    // A transport error (a malformed message, a closed pipe) is the client's problem, never the process's.
    server.onerror = () => undefined
  }

  /** Serves the client on `transport`. */
  connect(transport: Transport): Promise<void> {
    return this.server.connect(transport)
  }

  /** Stops notifying and closes the connection. Idempotent. */
  async close(): Promise<void> {
    this.resources.close()
    await this.server.close().catch(() => undefined)
  }
}
