/**
 * Text tools on Yjs documents: `text_insert`, `text_delete`,
 * `text_replace` (a range) and `text_replace_match` (the first match of a
 * string: the edit a model naturally makes). Indices are UTF-16 code units
 * of the text as `read` returns it. With a stale `ifVersion` an edit still
 * applies, to the text as it was read, merged with what changed since
 * (mcp/text.ts); the answer says `concurrent` and shows those changes.
 */
import { z } from 'zod'
import type { YjsReplica } from '../../crdt/documents/yjs-replica.ts'
import { MCP_LIMITS } from '../limits.ts'
import { applyTextEdit, chooseTextField, locate, type TextEdit } from '../text.ts'
import { defineTool, ifVersionArg, messageArg, nameArg } from './tool.ts'
import { writeFlow } from './write-flow.ts'
import type { ToolContext } from './tool.ts'

const fieldArg = z.string().min(1).max(1024).optional().describe('the text field of the document (default: its only text, or "text" in a new document)')
const indexArg = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe('position in the text (UTF-16 code units, as JavaScript string indices)')
const lengthArg = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe('characters (UTF-16 code units)')
const textArg = z.string().max(MCP_LIMITS.maxEditChars)
const common = { name: nameArg, field: fieldArg, message: messageArg, ifVersion: ifVersionArg }

function editText(
  context: ToolContext,
  tool: string,
  args: { name: string; field?: string | undefined; message?: string | undefined; ifVersion?: string | undefined },
  edit: TextEdit,
) {
  return writeFlow(context, {
    tool,
    name: args.name,
    accepts: ['yjs'],
    creates: edit.op === 'insert' ? 'yjs' : undefined,
    message: args.message,
    ifVersion: args.ifVersion,
    merges: true,
    checkNew: () => void locate('', edit),
    change: ({ replica }, readDoc) => {
      const doc = replica as YjsReplica
      const field = chooseTextField(readDoc ?? doc.doc, args.field)
      return { ...applyTextEdit(doc, field, edit, readDoc) }
    },
  })
}

export const textInsert = defineTool({
  name: 'text_insert',
  title: 'Insert text',
  description: 'Inserts text at "index" of a Yjs document\'s text (index = its length appends). Creates the document when the name is new.',
  input: z.strictObject({ ...common, index: indexArg, text: textArg.min(1) }),
  async run(args, context) {
    return editText(context, 'text_insert', args, { op: 'insert', index: args.index, text: args.text })
  },
})

export const textDelete = defineTool({
  name: 'text_delete',
  title: 'Delete text',
  description: 'Deletes "length" characters from "index" of a Yjs document\'s text.',
  input: z.strictObject({ ...common, index: indexArg, length: lengthArg }),
  async run(args, context) {
    return editText(context, 'text_delete', args, { op: 'delete', index: args.index, length: args.length })
  },
})

export const textReplace = defineTool({
  name: 'text_replace',
  title: 'Replace a range of text',
  description: 'Replaces "length" characters from "index" of a Yjs document\'s text with "text".',
  input: z.strictObject({ ...common, index: indexArg, length: lengthArg, text: textArg }),
  async run(args, context) {
    return editText(context, 'text_replace', args, { op: 'replace', index: args.index, length: args.length, text: args.text })
  },
})

export const textReplaceMatch = defineTool({
  name: 'text_replace_match',
  title: 'Replace a match',
  description:
    'Replaces the first occurrence (or the "occurrence"-th) of "find" in a Yjs document\'s text with "replace"; ' +
    'an error if the text does not contain it. The edit to make when you know what the text says rather than where.',
  input: z.strictObject({
    ...common,
    find: z.string().min(1).max(MCP_LIMITS.maxFindChars),
    replace: textArg,
    occurrence: z.number().int().min(1).max(10_000).optional().describe('which occurrence (default 1, the first)'),
  }),
  async run(args, context) {
    return editText(context, 'text_replace_match', args, { op: 'replace_match', find: args.find, text: args.replace, occurrence: args.occurrence ?? 1 })
  },
})

/** Every text tool. */
export const TEXT_TOOLS = [textInsert, textDelete, textReplace, textReplaceMatch]
