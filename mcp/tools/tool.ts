/**
 * How a tool is defined and called: a stable name, a description for the
 * model, a zod schema (published as the tool's JSON Schema and checked on
 * every call: unknown keys, wrong types and oversized strings are refused
 * before the tool runs) and a handler. Every outcome is a `CallToolResult`
 * with structured content; a failure is a tool error with a Concord code
 * (mcp/errors.ts), never an exception out of the server.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { canonicalJson, type Json } from '../../crdt/types/json.ts'
import type { Peer } from '../../peer/index.ts'
import { clip, invalid, toolError } from '../errors.ts'
import { MCP_LIMITS } from '../limits.ts'
import type { Principal } from '../principal.ts'

/** What a tool runs with: the peer and who calls. */
export interface ToolContext {
  readonly peer: Peer
  readonly principal: Principal
}

/** A tool's answer: its structured result, or a failure (with extra structured content, e.g. a conflict's changes). */
export type ToolAnswer = { readonly result: Record<string, unknown> } | { readonly error: unknown; readonly extra?: Record<string, unknown> }

/** A tool: see the module comment. */
export interface ToolDefinition {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly input: z.ZodObject
  readonly annotations: { readonly readOnlyHint?: boolean; readonly destructiveHint?: boolean; readonly idempotentHint?: boolean }
  run(args: never, context: ToolContext): Promise<ToolAnswer>
}

/** Defines a tool (keeps the handler's argument type tied to its schema). */
export function defineTool<S extends z.ZodObject>(tool: {
  name: string
  title: string
  description: string
  input: S
  annotations?: ToolDefinition['annotations']
  run(args: z.infer<S>, context: ToolContext): Promise<ToolAnswer>
}): ToolDefinition {
  return { annotations: {}, ...tool } as ToolDefinition
}

/** The tool as `tools/list` shows it: name, title, description, JSON Schema of its input, annotations. */
export function describeTool(tool: ToolDefinition): Tool {
  const schema = z.toJSONSchema(tool.input) as Record<string, unknown>
  delete schema.$schema
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: schema as Tool['inputSchema'],
    annotations: { title: tool.title, openWorldHint: false, ...tool.annotations },
  }
}

/** Runs the tool `name` with `args` (as received); every failure is a tool error. */
export async function callTool(tools: ReadonlyMap<string, ToolDefinition>, name: string, args: unknown, context: ToolContext): Promise<CallToolResult> {
  const tool = tools.get(name)
  if (!tool) return toolError(invalid(`no tool named "${clip(name, 80)}" (tools/list lists them)`))
  const parsed = tool.input.safeParse(args ?? {})
  if (!parsed.success) return toolError(invalid(`${tool.name}: ${describeIssues(parsed.error)}`))
  let answer: ToolAnswer
  try {
    answer = await tool.run(parsed.data as never, context)
  } catch (error) {
    return toolError(error)
  }
  if ('error' in answer) return toolError(answer.error, answer.extra)
  const structured = { ok: true, ...answer.result }
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.join('.') : 'arguments'
      return `${where}: ${clip(issue.message, 160)}`
    })
    .join('; ')
}

// ---- shared argument schemas -------------------------------------------------

/** A name (1 to 1024 characters). */
export const nameArg = z.string().min(1).max(1024).describe('the name (a counter, set, register, map or document)')

/** Why: recorded with the change as provenance. */
export const messageArg = z
  .string()
  .max(MCP_LIMITS.maxMessageChars)
  .optional()
  .describe('why you make this change; kept with the change (your agent id is recorded with it)')

/** A version token from `read` or an earlier write. */
export const ifVersionArg = z
  .string()
  .max(64)
  .optional()
  .describe(
    'the "version" from your read: if the name changed since, nothing is written and the answer says what changed (text edits still apply, mapped onto the current text)',
  )

/** Any JSON value (checked and bounded by {@link jsonArg}). */
export const jsonValue = z.unknown().describe('a JSON value')

/** A log seq (1, 2, ... as history lists them; 0 is the empty state). */
export const seqArg = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)

/** A JSON value given to a write: checked to be JSON and at most {@link MCP_LIMITS.maxValueBytes} bytes. */
export function jsonArg(value: unknown, what: string): Json {
  if (value === undefined) throw invalid(`${what} is required`)
  const text = canonicalJson(value)
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes > MCP_LIMITS.maxValueBytes) {
    throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `${what} is ${bytes} bytes of JSON, over the limit of ${MCP_LIMITS.maxValueBytes}`)
  }
  return JSON.parse(text) as Json
}

/** ISO time of a hybrid logical clock's wall time. */
export function isoTime(wall: number): string {
  return new Date(wall).toISOString()
}
