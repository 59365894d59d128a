/**
 * Bounds of the MCP server: what one tool call may carry and what one
 * result may hold, so that every answer fits in a model's context and no
 * argument can make the server allocate without limit. Larger values are
 * read in pages (`offset`, `limit`, `path`).
 */
export const MCP_LIMITS = {
  /** Characters of JSON in one result's value (about 6k tokens); larger values are paged. */
  maxResultChars: 24_000,
  /** Characters of text in one page of a text (default of `limit`). */
  textPageChars: 16_000,
  /** Items (array elements, object keys, names, records, spans) in one page. */
  maxPageItems: 200,
  /** Characters of text one edit may insert. */
  maxEditChars: 256 * 1024,
  /** Bytes of canonical JSON in one value written (a register, a map field, a set element, a patch value). */
  maxValueBytes: 256 * 1024,
  /** Elements added or removed by one set call. */
  maxElements: 100,
  /** Operations in one JSON Patch. */
  maxPatchOps: 100,
  /** Segments of a path (a map path, a JSON pointer). */
  maxPathSegments: 32,
  /** Characters of a `message` (why). */
  maxMessageChars: 4096,
  /** Records `blame` replays at most. */
  maxBlameRecords: 2000,
  /** Records `history` scans for an `agent` filter at most. */
  maxHistoryScan: 5000,
  /** Characters of one search string (`text_replace_match`). */
  maxFindChars: 16 * 1024,
} as const
