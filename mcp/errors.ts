/**
 * Errors of the MCP server. Every failure of a tool is an MCP tool error
 * (`isError: true`) whose text starts with the stable Concord code and
 * whose structured content is `{ ok: false, error: { code, message } }`;
 * a stale conditional write adds what changed. Unexpected exceptions are
 * reported the same way (the server stays up), never as a stack trace.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { ConcordError, ErrorCodes, isConcordError, type ErrorCode } from '../crdt/errors.ts'

/** The refusal of a name the client may not read, or that does not exist: the same words for both. */
export function noSuchName(name: string): ConcordError {
  return new ConcordError(ErrorCodes.NOT_FOUND, `no such name "${clip(name, 200)}"`)
}

/** An argument outside what the tool accepts. */
export function invalid(message: string): ConcordError {
  return new ConcordError(ErrorCodes.INVALID_ARGUMENT, message)
}

/** A string cut for a message. */
export function clip(text: string, max = 120): string {
  return text.length <= max ? text : `${text.slice(0, max)}...`
}

/** The error result of a failed tool call; `extra` goes into the structured content (a conflict's changes). */
export function toolError(error: unknown, extra: Record<string, unknown> = {}): CallToolResult {
  const { code, message } = describe(error)
  const structured = { ok: false, error: { code, message }, ...extra }
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message}${Object.keys(extra).length > 0 ? `\n${JSON.stringify(extra)}` : ''}` }],
    structuredContent: structured,
  }
}

/** Code and message of any error: a ConcordError's own, else an internal error (its message only). */
export function describe(error: unknown): { code: ErrorCode | 'CONCORD_INTERNAL'; message: string } {
  if (isConcordError(error)) return { code: error.code, message: error.message }
  return { code: 'CONCORD_INTERNAL', message: clip(error instanceof Error ? error.message : String(error), 500) }
}
