/** Every tool of the MCP server, by name (names and schemas are stable: README, "LLM agents (MCP)"). */
import { presence } from './presence-tool.ts'
import { READ_TOOLS } from './read-tools.ts'
import { TEXT_TOOLS } from './text-tools.ts'
import type { ToolDefinition } from './tool.ts'
import { WRITE_TOOLS } from './write-tools.ts'

export { callTool, describeTool, type ToolContext, type ToolDefinition } from './tool.ts'

/** The tools, in the order `tools/list` shows them. */
export const TOOLS: readonly ToolDefinition[] = [...READ_TOOLS, ...WRITE_TOOLS, ...TEXT_TOOLS, presence]

/** The tools by name. */
export const TOOLS_BY_NAME: ReadonlyMap<string, ToolDefinition> = new Map(TOOLS.map((tool) => [tool.name, tool]))
