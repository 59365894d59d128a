/**
 * concord-crdt/mcp: the Model Context Protocol server over a Concord peer, the
 * door through which LLM agents use shared memory without writing code
 * (README, "LLM agents (MCP)").
 *
 * ```ts
 * import { createPeer } from 'concord-crdt'
 * import { mcpRoute, serveMcpStdio } from 'concord-crdt/mcp'
 * const peer = await createPeer({ agentId: 'hub', dir: './state/hub', auth: { token } })
 * await peer.listen({ port: 4400, routes: [mcpRoute(peer)] })   // streamable HTTP at /mcp
 * await serveMcpStdio(peer)                                      // or one client over stdio
 * ```
 */
export { ConcordMcpServer, MCP_INSTRUCTIONS, MCP_SERVER_INFO, type McpServerOptions } from './server.ts'
export { serveMcpStdio, STDIO_MAX_MESSAGE_BYTES, type StdioMcp } from './stdio.ts'
export { mcpRoute, McpHttpRoute, type McpHttpOptions, type McpHttpStats } from './http.ts'
export { localPrincipal, remotePrincipal, type Principal } from './principal.ts'
export { TOOLS } from './tools/index.ts'
export { PROMPTS } from './prompts.ts'
export { NAME_URI_PREFIX, nameUri, uriName } from './resources.ts'
export { MCP_LIMITS } from './limits.ts'
