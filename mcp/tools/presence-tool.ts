/**
 * `presence`: what each agent says it is working on, across every peer
 * (peer/presence.ts: relayed over the sync sessions, never persisted, with
 * a time to live). An agent sets its own entry (under its agent id),
 * clears it, or lists everyone's; an entry about a name the client may not
 * read is not shown to it.
 */
import { z } from 'zod'
import { PRESENCE_LIMITS } from '../../sync/index.ts'
import { noSuchName } from '../errors.ts'
import { defineTool, jsonArg, jsonValue } from './tool.ts'

export const presence = defineTool({
  name: 'presence',
  title: 'Who works on what',
  description:
    'Presence of agents across all peers. action "set": say what you are working on (status: text or JSON; optionally the name it is about) ' +
    'for ttlSeconds (default 120; set it again to stay); "clear": you are done; "list" (default): what every agent says now. Never stored.',
  input: z.strictObject({
    action: z.enum(['list', 'set', 'clear']).optional(),
    status: jsonValue.optional().describe('what you are doing: a sentence, or a small JSON object (at most 4 KiB)'),
    name: z.string().min(1).max(1024).optional().describe('the name your work is about (shown only to agents that may read it)'),
    ttlSeconds: z
      .number()
      .int()
      .min(1)
      .max(PRESENCE_LIMITS.maxTtlMs / 1000)
      .optional(),
  }),
  annotations: { idempotentHint: true },
  async run(args, { peer, principal }) {
    const action = args.action ?? (args.status !== undefined ? 'set' : 'list')
    if (action === 'set') {
      if (args.name !== undefined && !principal.mayRead(args.name)) throw noSuchName(args.name)
      peer.presence.set(principal.agent, { status: jsonArg(args.status ?? 'working', 'status'), name: args.name, ttlMs: (args.ttlSeconds ?? 120) * 1000 })
    } else if (action === 'clear') {
      peer.presence.clear(principal.agent)
    }
    const now = Date.now()
    const agents = peer.presence
      .list((name) => name === undefined || principal.mayRead(name))
      .map((info) => ({
        agent: info.agent,
        status: info.status,
        ...(info.name !== undefined ? { name: info.name } : {}),
        peer: info.peer,
        expiresInSeconds: Math.max(0, Math.round((info.expiresAt - now) / 1000)),
        ...(info.agent === principal.agent ? { you: true } : {}),
      }))
    return { result: { you: principal.agent, agents } }
  },
})
