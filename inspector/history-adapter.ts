/**
 * Where the inspector gets blame and diff from: today the MCP server's
 * (mcp/blame.ts replays the log; mcp/diff.ts compares two states). Issue 16
 * moves them below the peer, with the records' message and meta; when it
 * lands, this file is the one to point at the store's own. Nothing here
 * computes anything.
 */
export { blame, type Blame, type BlameReport } from '../mcp/blame.ts'
export { changesBetween, type Changes, type TextSpan } from '../mcp/diff.ts'
export { toJson } from '../mcp/paging.ts'
