/**
 * Prompts that teach a model to coordinate through Concord: claim a task
 * in a shared OR-set before working on it, say so in presence, append
 * findings to the shared document with a reason, count what is done; and
 * review what changed (history, diff, blame, revert).
 */
import type { GetPromptResult, Prompt } from '@modelcontextprotocol/sdk/types.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { ErrorCodes } from '../crdt/errors.ts'

const INVALID_PARAMS = -32602

/** The prompts `prompts/list` shows. */
export const PROMPTS: Prompt[] = [
  {
    name: 'coordinate_task',
    title: 'Coordinate a task with other agents',
    description: 'How to take on a task that other agents may also want, through shared names: claim it, work, record findings and why, mark it done.',
    arguments: [
      { name: 'task', description: 'the task to do (a short id, e.g. "sources")', required: true },
      { name: 'claims', description: 'the OR-set of claims (default "claims")' },
      { name: 'notes', description: 'the Yjs document for findings (default "notes")' },
      { name: 'done', description: 'the counter of finished tasks (default "tasks-done")' },
    ],
  },
  {
    name: 'review_changes',
    title: 'Review what changed in a name',
    description: 'How to find out who changed a shared name, what and why, and how to undo a change.',
    arguments: [{ name: 'name', description: 'the name to review', required: true }],
  },
]

function argument(args: Record<string, string> | undefined, key: string, fallback?: string): string {
  const value = args?.[key] ?? fallback
  if (value === undefined || value.length === 0) {
    throw new McpError(INVALID_PARAMS, `CONCORD_INVALID_ARGUMENT: the prompt needs the argument "${key}"`, { code: ErrorCodes.INVALID_ARGUMENT })
  }
  if (value.length > 1024)
    throw new McpError(INVALID_PARAMS, `CONCORD_INVALID_ARGUMENT: "${key}" is longer than 1024 characters`, { code: ErrorCodes.INVALID_ARGUMENT })
  return value
}

/** The text of a prompt with its arguments. */
export function getPrompt(name: string, args: Record<string, string> | undefined, agent: string): GetPromptResult {
  if (name === 'coordinate_task') {
    const task = argument(args, 'task')
    const claims = argument(args, 'claims', 'claims')
    const notes = argument(args, 'notes', 'notes')
    const done = argument(args, 'done', 'tasks-done')
    const claim = `${task}@${agent}`
    return {
      description: `Coordinate the task "${task}" with the other agents`,
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              `You share memory with other agents through Concord (the tools of this server). Your agent id is "${agent}". Do the task "${task}" without doing work another agent is doing:`,
              `1. Look first: call presence (action "list") and read "${claims}". If another agent claimed "${task}" (an element "${task}@<agent>"), pick another task.`,
              `2. Claim it: set_add to "${claims}" the element "${claim}", with a message saying why you take it. Then read "${claims}" again: if another agent claimed "${task}" at the same time, the claim whose agent id sorts first keeps it; if that is not you, set_remove your claim (message: "yielding to <agent>") and pick another task.`,
              `3. Say what you do: presence with action "set", status "working on ${task}", name "${claims}", and a ttlSeconds you will renew while you work.`,
              `4. Record findings: read "${notes}" (it gives the text and a version), then text_insert at the end (index = the text's length) one line "[${task}] <finding> (by ${agent})", with ifVersion set to that version and a message saying where the finding comes from. If the answer says "concurrent", your line was merged with what others wrote meanwhile: read again before any further edit by position. Prefer text_replace_match to change a line you can quote.`,
              `5. Finish: counter_add 1 to "${done}" with a message naming the task, then presence action "clear".`,
              'Always give a short "message" (why) on every write: it is kept with the change for the other agents. Use history and blame to see who wrote what.',
            ].join('\n'),
          },
        },
      ],
    }
  }
  if (name === 'review_changes') {
    const target = argument(args, 'name')
    return {
      description: `Review the changes of "${target}"`,
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              `Review who changed "${target}", what and why, through the Concord tools:`,
              `1. history of "${target}": the newest records, each with its seq, time and agent (filter with agent, page with before).`,
              '2. diff from an older seq (to now, or to another seq): what changed between them.',
              '3. blame: who wrote each part of what it holds now (each span of a text, each path of a map or document).',
              '4. at: the value right after a given seq, to read an older version in full.',
              `5. To undo: revert "${target}" to a seq, with a message saying why. It is a new change every agent receives; the history keeps everything.`,
            ].join('\n'),
          },
        },
      ],
    }
  }
  throw new McpError(INVALID_PARAMS, `CONCORD_INVALID_ARGUMENT: no prompt named "${name.slice(0, 80)}"`, { code: ErrorCodes.INVALID_ARGUMENT })
}
